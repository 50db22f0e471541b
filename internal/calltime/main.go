// Command calltime profiles BenchmarkCall (runtime/bench_test.go) and
// writes, for each transport, where the client process's CPU time of a call
// goes — heddle, JSON, go-sdk's session, the transport, the kernel, the Go
// runtime — between the calltime markers of docs/performance.md. make bench
// runs it after the benchmarks (make calltime alone):
//
//	go run ./internal/calltime                          # stdio, http-proc, http-proc-json; heddle and raw go-sdk
//	go run ./internal/calltime -transports inmemory     # one transport
//	go run ./internal/calltime -calls 20000 -print      # longer runs, the text on stdout only
//
// It builds the runtime package's test binary once (go test -c) and runs it
// once per transport and side, as go test would run it:
//
//	runtime.test -test.run '^$' -test.bench '^BenchmarkCall$/^stdio$/^heddle$' -test.benchtime 6000x -test.cpuprofile …
//
// so that each profile holds one side's calls over one transport and
// nothing else. It reads b.N from the benchmark's line and the samples from
// the profile, which it decodes itself (profile.go), and attributes each
// sample to one bucket by the rule in bucket.go, which the generated text
// states. Content outside the markers is never touched; a document without
// them is an error.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	var (
		doc        = flag.String("doc", "docs/performance.md", "the document whose calltime markers get the tables")
		pkg        = flag.String("pkg", "./runtime/", "the package holding BenchmarkCall")
		transports = flag.String("transports", "stdio,http-proc,http-proc-json", "comma-separated transports of BenchmarkCall (inmemory, stdio, http, http-proc, http-proc-json)")
		sides      = flag.String("sides", "heddle,raw", "comma-separated sides: heddle, raw")
		calls      = flag.Int("calls", 6000, "calls per profiled run (-test.benchtime Nx)")
		printOnly  = flag.Bool("print", false, "print the text instead of writing it into -doc")
		why        = flag.Int("why", 0, "print to stderr, for each run and bucket, the `n` functions that decided most samples")
		keep       = flag.String("keep", "", "a directory to keep the test binary and profiles in (default: a temporary one, removed)")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := config{pkg: *pkg, transports: splitList(*transports), sides: splitList(*sides), calls: *calls, dir: *keep, why: *why}
	if err := generate(ctx, cfg, *doc, *printOnly); err != nil {
		fmt.Fprintln(os.Stderr, "calltime:", err)
		os.Exit(1)
	}
}

// config is what to profile and how.
type config struct {
	pkg        string
	transports []string
	sides      []string
	calls      int
	dir        string // where the binary and profiles go; "" for a temporary directory
	why        int    // functions per bucket to print for each run
}

// generate profiles the runs cfg names and writes the tables into the
// document at docPath, or prints them.
func generate(ctx context.Context, cfg config, docPath string, printOnly bool) error {
	if err := cfg.check(); err != nil {
		return err
	}
	if !printOnly {
		// Check the document before spending a minute on the runs.
		if err := writeMarked(docPath, "", true); err != nil {
			return err
		}
	}
	dir := cfg.dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "calltime")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	// What was measured is what was built: the commit, before the build.
	prov := provenance{LoadBefore: loadAverage(), CPUs: runtime.NumCPU(), CallsPerSide: cfg.calls, GoVersion: goVersion(ctx)}
	prov.Commit, prov.Dirty = gitCommit(ctx)
	runs, err := profileAll(ctx, cfg, dir)
	if err != nil {
		return err
	}
	prov.LoadAfter = loadAverage()
	prov.When = time.Now().UTC().Format("2006-01-02 15:04 UTC")
	text := report(prov, runs)
	if printOnly {
		fmt.Print(text)
		return nil
	}
	if err := writeMarked(docPath, text, false); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "calltime: wrote %d transports' tables into %s\n", len(cfg.transports), docPath)
	return nil
}

func (cfg config) check() error {
	if cfg.calls < 1 {
		return errors.New("-calls must be at least 1")
	}
	if len(cfg.transports) == 0 || len(cfg.sides) == 0 {
		return errors.New("no transports or no sides to profile")
	}
	for _, s := range cfg.sides {
		if _, ok := sideNames[s]; !ok {
			return fmt.Errorf("unknown side %q (heddle, raw)", s)
		}
	}
	return nil
}

// writeMarked replaces what lies between the document's calltime markers
// with text; with dryRun it only checks that it could.
func writeMarked(path, text string, dryRun bool) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := replaceMarked(string(doc), text)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if dryRun {
		return nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), info.Mode().Perm())
}

// profileAll builds the package's test binary into dir once and profiles
// each transport and side with it.
func profileAll(ctx context.Context, cfg config, dir string) ([]runResult, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "bench.test")
	fmt.Fprintf(os.Stderr, "calltime: building %s's test binary\n", cfg.pkg)
	if out, err := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, cfg.pkg).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go test -c %s: %v\n%s", cfg.pkg, err, out)
	}
	pkgDir, err := goList(ctx, cfg.pkg, "{{.Dir}}")
	if err != nil {
		return nil, err
	}
	var runs []runResult
	for _, tr := range cfg.transports {
		for _, side := range cfg.sides {
			s, err := profileRun(ctx, bin, pkgDir, dir, tr, side, cfg.calls)
			if err != nil {
				return nil, err
			}
			if cfg.why > 0 {
				s.why(os.Stderr, cfg.why)
			}
			runs = append(runs, runResult{Transport: tr, Side: side, Split: s})
		}
	}
	return runs, nil
}

// profileRun runs one side of BenchmarkCall over one transport under the
// CPU profiler and splits the profile.
func profileRun(ctx context.Context, bin, pkgDir, dir, transport, side string, calls int) (*split, error) {
	name := fmt.Sprintf("BenchmarkCall/%s/%s", transport, side)
	prof := filepath.Join(dir, transport+"-"+side+".prof")
	pattern := fmt.Sprintf("^BenchmarkCall$/^%s$/^%s$", regexp.QuoteMeta(transport), regexp.QuoteMeta(side))
	fmt.Fprintf(os.Stderr, "calltime: %s, %d calls\n", name, calls)
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^$", "-test.bench", pattern,
		"-test.benchtime", fmt.Sprintf("%dx", calls), "-test.count", "1", "-test.timeout", "10m",
		"-test.cpuprofile", prof)
	cmd.Dir = pkgDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", name, err, out)
	}
	n, nsPerOp, err := benchResult(out, name)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(prof)
	if err != nil {
		return nil, err
	}
	samples, err := readProfile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", prof, err)
	}
	// The testing package runs a benchmark once with b.N = 1 before the
	// run it reports.
	return splitSamples(samples, n+1, nsPerOp), nil
}

// benchResult returns b.N and ns/op from the benchmark's result line:
//
//	BenchmarkCall/stdio/heddle-2   5000   361066 ns/op   280500 p50-ns
func benchResult(out []byte, name string) (n int, nsPerOp float64, err error) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?:-\d+)?\s+(\d+)\s+([\d.]+) ns/op`)
	m := re.FindSubmatch(out)
	if m == nil {
		return 0, 0, fmt.Errorf("%s: no result line in the output:\n%s", name, out)
	}
	n, _ = strconv.Atoi(string(m[1]))
	nsPerOp, _ = strconv.ParseFloat(string(m[2]), 64)
	return n, nsPerOp, nil
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// loadAverage returns the 1-minute load average, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// gitCommit returns HEAD's short hash and whether tracked files differ
// from it.
func gitCommit(ctx context.Context) (string, bool) {
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown", false
	}
	dirty := exec.CommandContext(ctx, "git", "diff", "--quiet", "HEAD", "--").Run() != nil
	return strings.TrimSpace(string(out)), dirty
}

func goVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "go", "env", "GOVERSION", "GOOS", "GOARCH").Output()
	if f := strings.Fields(string(out)); err == nil && len(f) == 3 {
		return f[0] + " " + f[1] + "/" + f[2]
	}
	return runtime.Version()
}

func goList(ctx context.Context, pkg, format string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-f", format, pkg).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("go list %s: %v\n%s", pkg, err, bytes.TrimSpace(ee.Stderr))
		}
		return "", fmt.Errorf("go list %s: %v", pkg, err)
	}
	return strings.TrimSpace(string(out)), nil
}
