package conformance

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The server scenarios of conformance 0.2.0-alpha.12 each revision scores
// (--requirements REV); the suite runs a few more that do not count
// (extensions, pending ones, those added after the revision's release),
// named in notScored.
var scoredServerScenarios = map[string]int{"2025-11-25": 30, "2026-07-28": 37}

var notScored = map[string]bool{
	"server-session-lifecycle": true, "json-schema-2020-12": true, "server-sse-polling": true,
	"http-header-validation": true, "http-custom-header-server-validation": true,
}

// mustPass are scenarios of each revision the facade must pass whatever
// the baseline says: tools, transport and the requests for input.
var mustPass = map[string][]string{
	"2025-11-25": {"server-initialize", "tools-list", "tools-call-simple-text", "tools-call-error", "tools-call-with-progress", "dns-rebinding-protection"},
	"2026-07-28": {"tools-list", "tools-call-simple-text", "tools-call-error", "tools-call-with-progress", "dns-rebinding-protection",
		"input-required-result-basic-elicitation", "input-required-result-basic-sampling", "input-required-result-basic-list-roots",
		"input-required-result-request-state", "input-required-result-multiple-input-requests", "input-required-result-multi-round",
		"input-required-result-tampered-state", "input-required-result-capability-check", "input-required-result-ignore-extra-params"},
}

// TestServerConformance runs the suite's server scenarios of both protocol
// revisions, 2025-11-25 and 2026-07-28, against heddle's MCP facade:
// heddle serve's /mcp/{agent}, for an agent granted every tool of go-sdk's
// conformance fixture server (conformance/everything-server, the tools
// those scenarios expect by name), which heddle opens over stdio. For each
// revision it requires the suite's own verdict with
// expected-server-failures-REV.yml (every failure expected, no expected
// failure passing), the scenarios of mustPass, and the number of scored
// scenarios.
func TestServerConformance(t *testing.T) {
	node, index := need(t)
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	heddle, fixture := filepath.Join(tmp, "heddle"), filepath.Join(tmp, "everything-server")
	start := time.Now()
	for out, pkg := range map[string]string{heddle: "github.com/heddlehq/heddle/cmd/heddle", fixture: "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"} {
		args := []string{"build", "-o", out}
		if raceBuild && out == heddle {
			args = append(args, "-race")
		}
		if b, err := exec.Command("go", append(args, pkg)...).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", pkg, err, b)
		}
	}
	t.Logf("built heddle and the fixture in %s", time.Since(start).Round(time.Millisecond))
	work := filepath.Join(tmp, "work")
	for name, data := range map[string]string{
		"config/api.yaml": "ai:\n  mcp_servers:\n    everything: {transport: stdio, command: " + fixture + "}\n" +
			"serve:\n  auth: {kind: none}\n",
		"agents/everything/agent.yaml": "capabilities: [{kind: mcp, server: everything}]\npolicies: {approval: allow}\n",
	} {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base, serveLog := startServe(t, heddle, work)
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			results := filepath.Join(tmp, "results-"+rev)
			out, runErr := runSuite(t, 120*time.Second, node, index, dir, tmp,
				"server", "--url", base+"/mcp/everything", "--requirements", rev,
				"--expected-failures", filepath.Join(dir, "expected-server-failures-"+rev+".yml"), "-o", results)

			scenarios, err := readResults(results)
			if err != nil {
				t.Fatalf("reading the results: %v\nsuite output:\n%s", err, out.String())
			}
			passed, scored := 0, 0
			for _, name := range sortedKeys(scenarios) {
				r := scenarios[name]
				name = strings.TrimPrefix(name, "server-")
				if notScored[name] || strings.HasPrefix(name, "tasks-") || strings.HasPrefix(name, "sep-2640-") {
					continue
				}
				scored++
				if r.ok() {
					passed++
					t.Logf("PASS %-45s %d checks", name, r.success)
					continue
				}
				t.Logf("FAIL %-45s %d passed, %d failed, %d warnings: %s", name, r.success, r.failure, r.warning, strings.Join(r.problems, "; "))
			}
			t.Logf("conformance 0.2 server suite at %s against the facade: %d/%d scored scenarios pass", rev, passed, scored)
			for _, must := range mustPass[rev] {
				if r := scenarios["server-"+must]; r == nil || !r.ok() {
					t.Errorf("scenario %s does not pass", must)
				}
			}
			if runErr != nil {
				t.Errorf("the suite failed (%v): a failure not in expected-server-failures-%s.yml, or a listed scenario that now passes (remove it). Output:\n%s", runErr, rev, tail(out.String(), 80))
			}
			if scored != scoredServerScenarios[rev] {
				t.Errorf("the suite ran %d scored scenarios at %s, want %d", scored, rev, scoredServerScenarios[rev])
			}
		})
	}
	if t.Failed() {
		t.Logf("heddle serve's log:\n%s", tail(serveLog.String(), 80))
	}
}

// startServe runs heddle serve in dir on 127.0.0.1 and returns its base URL
// and its log; SIGTERM ends it when the test ends.
func startServe(t *testing.T, heddle, dir string) (string, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(heddle, "serve", "--listen", "127.0.0.1:0", "--grace", "2s", "--log-level", "info")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var log bytes.Buffer // written by the process only; read once it has ended, or on failure
	cmd.Stderr = &log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		for sc.Scan() {
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			t.Errorf("heddle serve did not end within 15 s of SIGTERM")
		}
	})
	select {
	case line := <-first:
		base, ok := strings.CutPrefix(line, "heddle: serving on ")
		if !ok {
			t.Fatalf("heddle serve printed %q", line)
		}
		return base, &log
	case <-time.After(30 * time.Second):
		t.Fatal("heddle serve did not listen within 30 s")
	}
	return "", nil
}
