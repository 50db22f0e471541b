// Command fuzzrun runs every fuzz target of the module for a set time each,
// one after the other, and prints a table of what each did: its executions,
// the new inputs that widened its coverage, and its time. make fuzz runs it:
//
//	go run ./internal/fuzzrun                       # every target, 20s each
//	go run ./internal/fuzzrun -fuzztime 1m -run Parse ./config/
//	go run ./internal/fuzzrun -out fuzz-results.txt # the table in a file too
//
// It finds the targets by reading the test files `go list` names for each
// package (func FuzzXxx(f *testing.F)), so that it builds no test binary
// just to list them, and runs each with go test -fuzz. The figures are those
// of the last progress line go test prints for the target:
//
//	fuzz: elapsed: 20s, execs: 123456 (6172/sec), new interesting: 12 (total: 40)
//
// A target that fails — a crash, a property broken, an input that hung its
// worker — fails the whole run, which goes on to the other targets first;
// the table and the last lines name each failed target and the input go
// test wrote to its testdata. One failure is not the target's: before Go
// 1.27, go test can fail a target with a bare "context deadline exceeded"
// when -fuzztime ends while a worker is busy (go.dev/issue/75804); it writes
// no input, and the table shows it as "ok (go#75804)".
//
// Each new input that widens coverage is minimized for at most
// -minimizetime (1s) rather than go test's 60s, which would spend most of a
// 20s run shrinking a few large inputs instead of trying new ones; a crash
// found is reported, with its input, either way.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	fuzztime := flag.Duration("fuzztime", 20*time.Second, "how long to fuzz each target")
	minimize := flag.Duration("minimizetime", time.Second, "how long to minimize each new input at most")
	run := flag.String("run", "", "run only the targets whose names match this regular expression")
	out := flag.String("out", "", "also write the summary to this file")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(mainErr(ctx, pkgs, *run, *fuzztime, *minimize, *out))
}

func mainErr(ctx context.Context, pkgs []string, run string, fuzztime, minimize time.Duration, out string) int {
	var match *regexp.Regexp
	if run != "" {
		var err error
		if match, err = regexp.Compile(run); err != nil {
			fmt.Fprintf(os.Stderr, "fuzzrun: -run: %v\n", err)
			return 2
		}
	}
	targets, err := findTargets(ctx, pkgs, match)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fuzzrun: %v\n", err)
		return 2
	}
	if len(targets) == 0 {
		fmt.Fprintln(os.Stderr, "fuzzrun: no fuzz targets")
		return 2
	}
	fmt.Printf("fuzzrun: %d targets, %v each: about %v of fuzzing, plus a build per target\n",
		len(targets), fuzztime, time.Duration(len(targets))*fuzztime)

	start := time.Now()
	var results []result
	for i, t := range targets {
		if ctx.Err() != nil {
			break
		}
		fmt.Printf("\n== [%d/%d] %s %s\n", i+1, len(targets), t.pkg, t.name)
		results = append(results, runTarget(ctx, t, fuzztime, minimize))
	}

	var sum bytes.Buffer
	writeSummary(&sum, results, fuzztime, time.Since(start), time.Now())
	fmt.Print("\n", sum.String())
	if out != "" {
		if err := os.WriteFile(out, sum.Bytes(), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "fuzzrun: %v\n", err)
			return 1
		}
		fmt.Printf("fuzzrun: summary written to %s\n", out)
	}
	failed := 0
	for _, r := range results {
		if r.race {
			fmt.Printf("note: %s %s: go test failed with go.dev/issue/75804's deadline race and wrote no input; counted as a pass\n", r.pkg, r.name)
		}
		if r.err != "" {
			failed++
			fmt.Printf("FAIL %s %s: %s\n", r.pkg, r.name, r.err)
		}
	}
	switch {
	case failed > 0:
		return 1
	case len(results) < len(targets):
		fmt.Println("fuzzrun: interrupted")
		return 1
	}
	return 0
}

// target is one fuzz function of one package.
type target struct {
	pkg  string // import path
	dir  string
	name string // FuzzXxx
}

// fuzzFunc matches the declaration of a fuzz target in a test file.
var fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz\w*)\(\s*\w+\s+\*testing\.F\s*\)`)

// findTargets lists the fuzz targets of pkgs whose names match (all when
// match is nil), in the order of go list and of their files.
func findTargets(ctx context.Context, pkgs []string, match *regexp.Regexp) ([]target, error) {
	args := append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .TestGoFiles \",\"}},{{join .XTestGoFiles \",\"}}"}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stderr = os.Stderr
	listing, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var targets []target
	for _, line := range strings.Split(strings.TrimSpace(string(listing)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			continue
		}
		for _, file := range strings.Split(f[2], ",") {
			if file == "" {
				continue
			}
			src, err := os.ReadFile(filepath.Join(f[1], file))
			if err != nil {
				return nil, err
			}
			for _, m := range fuzzFunc.FindAllSubmatch(src, -1) {
				if name := string(m[1]); match == nil || match.MatchString(name) {
					targets = append(targets, target{pkg: f[0], dir: f[1], name: name})
				}
			}
		}
	}
	return targets, nil
}

// result is what one target's run did.
type result struct {
	target
	progress
	wall time.Duration // the whole go test, its build included
	err  string        // why the target failed; "" when it passed
	// race is set when go test failed with go.dev/issue/75804's deadline
	// race alone: a pass.
	race bool
}

// progress is one of go test's progress lines while fuzzing.
type progress struct {
	seen        bool
	elapsed     time.Duration
	execs       int64
	interesting int64 // new inputs that widened coverage
	corpus      int64 // the corpus at the end, seeds included
}

var progressLine = regexp.MustCompile(`^fuzz: elapsed: (\w+), execs: (\d+) \(\d+/sec\)(?:, new interesting: (\d+) \(total: (\d+)\))?`)

// parseProgress reads a progress line of go test -fuzz.
func parseProgress(line string) (progress, bool) {
	m := progressLine.FindStringSubmatch(line)
	if m == nil {
		return progress{}, false
	}
	p := progress{seen: true}
	p.elapsed, _ = time.ParseDuration(m[1])
	p.execs, _ = strconv.ParseInt(m[2], 10, 64)
	if m[3] != "" {
		p.interesting, _ = strconv.ParseInt(m[3], 10, 64)
		p.corpus, _ = strconv.ParseInt(m[4], 10, 64)
	}
	return p, true
}

// failingInput matches go test's line naming the input a failure wrote.
var failingInput = regexp.MustCompile(`Failing input written to (\S+)`)

// runTarget fuzzes t for fuzztime, copying go test's output to ours.
func runTarget(ctx context.Context, t target, fuzztime, minimize time.Duration) result {
	r := result{target: t}
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-fuzz", "^"+t.name+"$",
		"-fuzztime", fuzztime.String(), "-fuzzminimizetime", minimize.String(), t.pkg)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		r.err = err.Error()
		return r
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	var input string
	deadline := false
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Println(line)
		if p, ok := parseProgress(line); ok {
			r.progress = p
		}
		if m := failingInput.FindStringSubmatch(line); m != nil {
			input = filepath.Join(t.dir, m[1])
		}
		if strings.TrimSpace(line) == "context deadline exceeded" {
			deadline = true
		}
	}
	_, _ = io.Copy(io.Discard, pr)
	err := <-done
	r.wall = time.Since(start)
	switch {
	case err != nil && input != "":
		r.err = "failing input " + input
	case err != nil && deadline && r.seen && ctx.Err() == nil:
		r.race = true
	case err != nil:
		r.err = err.Error()
	case !r.seen:
		r.err = "go test printed no progress line: did the target fuzz?"
	}
	return r
}

// writeSummary writes the table of results, in Markdown for the docs to
// copy, under a line saying when, where and for how long each target ran.
func writeSummary(w io.Writer, results []result, fuzztime, total time.Duration, now time.Time) {
	fmt.Fprintf(w, "fuzz run of %s: %d targets, %v each, on %s/%s with %d CPUs, %s; %v in all\n\n",
		now.UTC().Format("2006-01-02"), len(results), fuzztime, runtime.GOOS, runtime.GOARCH,
		runtime.NumCPU(), goVersion(), total.Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| package\t| target\t| executions\t| new interesting\t| corpus\t| fuzzing\t| wall\t| result\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---:\t|---:\t|---:\t|---:\t|---:\t|---\t|")
	for _, r := range results {
		status := "ok"
		switch {
		case r.err != "":
			status = "FAIL"
		case r.race:
			status = "ok (go#75804)"
		}
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %d\t| %d\t| %v\t| %v\t| %s\t|\n", shortPkg(r.pkg), r.name, thousands(r.execs),
			r.interesting, r.corpus, r.elapsed, r.wall.Round(time.Second), status)
	}
	tw.Flush()
}

// module is the module's path, which the table leaves out of package paths.
const module = "github.com/heddlehq/heddle"

func shortPkg(p string) string {
	if p == module {
		return "."
	}
	return strings.TrimPrefix(p, module+"/")
}

// thousands writes n with a comma between each group of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func goVersion() string {
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return runtime.Version()
	}
	return strings.TrimSpace(string(out))
}
