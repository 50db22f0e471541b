package conformance

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Scenario counts of conformance 0.1.16's server suite "all", against the
// facade.
const (
	totalServerScenarios = 32
	minServerPassing     = 16
)

// TestServerConformance runs the suite's server scenarios against heddle's
// MCP facade: heddle serve's /mcp/{agent}, for an agent granted every tool
// of go-sdk's conformance fixture server (conformance/everything-server,
// the tools those scenarios expect by name), which heddle opens over stdio.
// It requires the suite's own verdict with expected-server-failures.yml
// (every failure expected, no expected failure passing) and at least
// minServerPassing passing scenarios, the tools, DNS-rebinding and
// transport scenarios among them.
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

	results := filepath.Join(tmp, "results")
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "-r", filepath.Join(dir, "..", "listen-localhost.cjs"), index,
		"server", "--url", base+"/mcp/everything", "--suite", "all",
		"--expected-failures", filepath.Join(dir, "expected-server-failures.yml"), "-o", results)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start = time.Now()
	runErr := cmd.Run()
	t.Logf("the suite ran in %s", time.Since(start).Round(time.Millisecond))

	scenarios, err := readResults(results)
	if err != nil {
		t.Fatalf("reading the results: %v\nsuite output:\n%s", err, out.String())
	}
	passed := 0
	for _, name := range sortedKeys(scenarios) {
		r := scenarios[name]
		name = strings.TrimPrefix(name, "server-")
		if r.ok() {
			passed++
			t.Logf("PASS %-35s %d checks", name, r.success)
			continue
		}
		t.Logf("FAIL %-35s %d passed, %d failed, %d warnings: %s", name, r.success, r.failure, r.warning, strings.Join(r.problems, "; "))
	}
	t.Logf("conformance 0.1.16 server suite against the facade: %d/%d scenarios pass", passed, len(scenarios))
	for _, must := range []string{"tools-list", "tools-call-simple-text", "tools-call-error", "dns-rebinding-protection", "server-initialize"} {
		if r := scenarios["server-"+must]; r == nil || !r.ok() {
			t.Errorf("scenario %s does not pass", must)
		}
	}
	if runErr != nil {
		t.Errorf("the suite failed (%v): a failure not in expected-server-failures.yml, or a listed scenario that now passes (remove it). Output:\n%s", runErr, tail(out.String(), 80))
	}
	if len(scenarios) != totalServerScenarios {
		t.Errorf("the suite ran %d scenarios, want %d", len(scenarios), totalServerScenarios)
	}
	if passed < minServerPassing {
		t.Errorf("%d scenarios pass, want at least %d", passed, minServerPassing)
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
