package plugin_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds and strategies, the plugin host among them
	"github.com/heddlehq/heddle/internal/syncbuf"

	"github.com/heddlehq/heddle/auth/plugin"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
)

// TestEndToEnd opens a runtime whose server authenticates through the
// example plugin, and calls a tool: one plugin process, one token, the
// header sent exactly once per request, and no plugin call per request.
func TestEndToEnd(t *testing.T) {
	srv := startSession(t, time.Minute)
	rt := mustOpen(t, apiYAML(srv, pluginSum), nil)
	call(t, rt)
	pid := onePid(t)

	before := plugin.RPCCalls()
	for range 20 {
		call(t, rt)
	}
	if got := plugin.RPCCalls() - before; got != 0 {
		t.Errorf("20 calls with cached headers made %d plugin calls, want 0", got)
	}
	if got := srv.Mints(); got != 1 {
		t.Errorf("tokens minted = %d, want 1", got)
	}
	if got := srv.Refused(); got != 0 {
		t.Errorf("requests refused = %d, want 0", got)
	}
	counts := srv.HeaderCounts()
	if len(counts) < 21 {
		t.Fatalf("server saw %d requests, want at least 21", len(counts))
	}
	for i, n := range counts {
		if n != 1 {
			t.Fatalf("request %d carried %d Authorization headers, want exactly 1", i, n)
		}
	}

	// The plugin sees only the declared environment (plus go-plugin's own
	// PLUGIN_* handshake variables), none of the host's.
	t.Setenv("HEDDLE_HOST_ONLY", "host-CANARY")
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for kv := range strings.SplitSeq(strings.TrimRight(string(env), "\x00"), "\x00") {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
		if name != "PLUGIN_MODE" && name != "HEDDLE_AUTH_PLUGIN" && !strings.HasPrefix(name, "PLUGIN_") {
			t.Errorf("plugin environment has %s, which was not declared", name)
		}
	}
	if !slices.Contains(names, "PLUGIN_MODE") {
		t.Errorf("plugin environment %v lacks the declared PLUGIN_MODE", names)
	}
}

// TestExpiryRenewedOnce lets the token expire, then makes 32 concurrent
// calls: one renewal serves them all, before any is refused.
func TestExpiryRenewedOnce(t *testing.T) {
	// The test waits out one lifetime, so it is short; but the first call,
	// and the 32 after the renewal, must each end well within the 0.9 s a
	// token is used before the host renews it (they take under 0.1 s).
	const ttl = time.Second
	srv := startSession(t, ttl)
	log := &syncbuf.Buffer{}
	rt := mustOpen(t, apiYAML(srv, pluginSum), log)
	call(t, rt)
	if got := srv.Mints(); got != 1 {
		t.Fatalf("tokens minted = %d, want 1", got)
	}
	// The plugin's expiry counts from when the session endpoint's answer
	// reached it, so once it has passed the token is expired at the server
	// too.
	exp := fetchedExpiry(t, log)
	time.Sleep(time.Until(exp))

	callConcurrently(t, rt, 32)
	if got := srv.Mints(); got != 2 {
		t.Errorf("tokens minted = %d, want 2 (one renewal for 32 callers)", got)
	}
	if got := srv.Refused(); got != 0 {
		t.Errorf("requests refused = %d, want 0 (headers are renewed before they expire)", got)
	}
}

// fetchedExpiry waits for the host's DEBUG record of the first credentials
// it fetched, and returns their expiry, rounded up to the millisecond the
// log truncates it to.
func fetchedExpiry(t *testing.T, log *syncbuf.Buffer) time.Time {
	t.Helper()
	re := regexp.MustCompile(`msg="auth plugin credentials fetched" .*expires_at=(\S+)`)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if m := re.FindStringSubmatch(log.String()); m != nil {
			exp, err := time.Parse(time.RFC3339Nano, m[1])
			if err != nil {
				t.Fatalf("expires_at %q: %v", m[1], err)
			}
			return exp.Add(time.Millisecond)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no record of the credentials fetched within 5s:\n%s", log)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestUnauthorizedStorm revokes every token behind heddle's back: 32
// concurrent calls are refused with 401, and one renewal serves them all;
// each later revocation costs one more.
func TestUnauthorizedStorm(t *testing.T) {
	srv := startSession(t, time.Minute)
	rt := mustOpen(t, apiYAML(srv, pluginSum), nil)
	call(t, rt)
	for round := 1; round <= 2; round++ {
		srv.RevokeAll()
		refused := srv.Refused()
		callConcurrently(t, rt, 32)
		if got := srv.Mints(); got != 1+round {
			t.Errorf("round %d: tokens minted = %d, want %d (one renewal per revocation)", round, got, 1+round)
		}
		if srv.Refused() == refused {
			t.Errorf("round %d: no request was refused; the storm did not happen", round)
		}
	}
}

func callConcurrently(t *testing.T, rt *runtime.Runtime, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			if err := tryCall(rt); err != nil {
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestPluginCrash kills the plugin process: cached headers keep working,
// and the next need for the plugin starts a new one.
func TestPluginCrash(t *testing.T) {
	srv := startSession(t, time.Minute)
	log := &syncbuf.Buffer{}
	rt := mustOpen(t, apiYAML(srv, pluginSum), log)
	call(t, rt)
	old := onePid(t)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, old, 2*time.Second)

	call(t, rt) // cached headers: the plugin is not needed
	if pids := pidsOf(pluginBin); len(pids) != 0 {
		t.Fatalf("plugin restarted with no need: %v", pids)
	}

	srv.RevokeAll() // now it is: 401 → Renew → restart → Configure → Renew
	call(t, rt)
	if now := onePid(t); now == old {
		t.Fatalf("plugin pid %d after restart is the crashed one", now)
	}
	if got := srv.Mints(); got != 2 {
		t.Errorf("tokens minted = %d, want 2", got)
	}
	if !strings.Contains(log.String(), "auth plugin process stopped") {
		t.Errorf("the crash was not logged:\n%s", log)
	}
}

// TestChecksumMismatch declares another binary's checksum: Open fails with
// MCP_AUTH_STRATEGY_INVALID and the binary never ran.
func TestChecksumMismatch(t *testing.T) {
	srv := startSession(t, time.Minute)
	wrong := strings.Repeat("ab", 32)
	_, err := openRT(t, apiYAML(srv, wrong), nil)
	if !diag.Has(err, diag.MCPAuthStrategyInvalid) {
		t.Fatalf("Open = %v, want MCP_AUTH_STRATEGY_INVALID", err)
	}
	if !strings.Contains(err.Error(), "not started") {
		t.Errorf("error %q does not say the binary was not started", err)
	}
	if pids := pidsOf(pluginBin); len(pids) != 0 {
		t.Fatalf("plugin processes %v exist after a checksum mismatch", pids)
	}
	if got := plugin.LiveProcs(); got != 0 {
		t.Fatalf("the host holds %d plugin processes after a failed Open", got)
	}
}

// TestCloseKillsPlugin: no plugin process outlives rt.Close.
func TestCloseKillsPlugin(t *testing.T) {
	srv := startSession(t, time.Minute)
	rt, err := openRT(t, apiYAML(srv, pluginSum), nil)
	if err != nil {
		t.Fatal(err)
	}
	call(t, rt)
	pid := onePid(t)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("plugin %d still running when Close returned", pid)
		waitGone(t, pid, time.Second)
	}
	if got := plugin.LiveProcs(); got != 0 {
		t.Fatalf("the host holds %d plugin processes after Close", got)
	}
}

// TestSharedProcess: two servers naming one plugin share one process, each
// with its own strategy instance (settings, token, renewals).
func TestSharedProcess(t *testing.T) {
	a := startSession(t, time.Minute)
	b := startSession(t, time.Minute)
	api := fmt.Sprintf(`
ai:
  auth_plugins:
    agent-session: {command: %s, sha256: %q}
  mcp_servers:
    orders:
      url: %s
      auth: {kind: agent-session, session_url: %s, secret_path: %s, bootstrap_ref: "${env:AGENT_BOOTSTRAP}"}
    billing:
      url: %s
      auth: {kind: agent-session, session_url: %s, secret_path: %s, bootstrap_ref: "${env:AGENT_BOOTSTRAP}"}
`, pluginBin, pluginSum, a.MCPURL(), a.SessionURL(), secretPath, b.MCPURL(), b.SessionURL(), secretPath)
	p, err := compileAPI(api, map[string]string{
		"sales": `capabilities: [{kind: mcp, server: orders}, {kind: mcp, server: billing}]`,
	})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.Open(t.Context(), p, runtime.Options{Secrets: testSecrets()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ts, err := rt.Toolset("sales")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"orders__echo", "billing__echo"} {
		res, err := ts.Call(t.Context(), name, map[string]any{"text": "x"})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", name, res, err)
		}
	}
	onePid(t)
	if a.Mints() != 1 || b.Mints() != 1 {
		t.Errorf("mints = %d, %d; want one token per server", a.Mints(), b.Mints())
	}
	a.RevokeAll()
	if _, err := ts.Call(t.Context(), "orders__echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	if a.Mints() != 2 || b.Mints() != 1 {
		t.Errorf("after revoking orders' token: mints = %d, %d; want 2, 1", a.Mints(), b.Mints())
	}
}

// TestHostKilledPluginDies runs a host program (this test binary) that
// opens the runtime, SIGKILLs it, and checks that its plugin dies within a
// second (Pdeathsig).
func TestHostKilledPluginDies(t *testing.T) {
	srv := startSession(t, time.Minute)
	planFile := filepath.Join(t.TempDir(), "api.yaml")
	if err := os.WriteFile(planFile, []byte(apiYAML(srv, pluginSum)), 0o600); err != nil {
		t.Fatal(err)
	}
	host := exec.Command(os.Args[0], "-test.run=^$")
	// The host's temporary directory is the test's: a host killed with
	// SIGKILL cannot remove the directory of its plugin's socket.
	host.Env = append(os.Environ(), hostEnv+"="+planFile, hostEnv+"_BIN="+pluginBin, "TMPDIR="+t.TempDir())
	stderr := &syncbuf.Buffer{}
	host.Stderr = stderr
	stdout, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = host.Process.Kill(); _ = host.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("host: %v\n%s", err, stderr)
	}
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "ready" {
		t.Fatalf("host said %q\n%s", line, stderr)
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil || !alive(pid) {
		t.Fatalf("host reported plugin pid %q, not a running process", f[1])
	}
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	waitGone(t, pid, time.Second)
	checkNoSecrets(t, srv, "host output", line+stderr.String())
}

// TestCanary runs the plugin through renewal, a refused bootstrap secret, a
// crash and an unreachable session endpoint, and looks for the bootstrap
// secret and every token in the log (DEBUG), the errors and the messages.
func TestCanary(t *testing.T) {
	srv := startSession(t, time.Minute)
	log := &syncbuf.Buffer{}
	var seen []string

	// A wrong bootstrap secret: Open succeeds (credentials are fetched on
	// first use), the connection fails, the error names no secret.
	wrongAPI := strings.Replace(apiYAML(srv, pluginSum), "AGENT_BOOTSTRAP", "WRONG_BOOTSTRAP", 1)
	if _, err := openRT(t, wrongAPI, log); err == nil {
		t.Fatal("Open with a wrong bootstrap secret succeeded")
	} else {
		seen = append(seen, err.Error())
	}

	rt := mustOpen(t, apiYAML(srv, pluginSum), log)
	call(t, rt)
	srv.RevokeAll()
	call(t, rt)
	_ = syscall.Kill(onePid(t), syscall.SIGKILL)
	srv.RevokeAll()
	call(t, rt)
	srv.RevokeAll()
	srv.SetDown(true)
	if err := tryCall(rt); err == nil {
		t.Error("a call succeeded while the session endpoint was down and the token revoked")
	} else {
		seen = append(seen, err.Error())
	}
	srv.SetDown(false)
	if srv.Mints() < 3 {
		t.Fatalf("tokens minted = %d, want at least 3", srv.Mints())
	}
	checkNoSecrets(t, srv, "errors", strings.Join(seen, "\n"))
	checkNoSecrets(t, srv, "log", log.String())
	if !strings.Contains(log.String(), "level=DEBUG") {
		t.Fatal("the captured log has no DEBUG lines: the canary looked at nothing")
	}
}

func checkNoSecrets(t *testing.T, srv interface{ Issued() []string }, where, text string) {
	t.Helper()
	for _, s := range append(srv.Issued(), bootstrap, "wrong-CANARY") {
		if strings.Contains(text, s) {
			t.Errorf("%s contain a secret (%.12s…)", where, s)
		}
	}
}
