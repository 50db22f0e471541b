package plugin_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/auth/plugin"
	"github.com/heddlehq/heddle/auth/pluginsdk"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/syncbuf"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/secrets"
)

const testSecret = "test-secret-CANARY-91c4"

// buildTest builds testplugin's strategy in the given mode.
func buildTest(t *testing.T, mode string, log *syncbuf.Buffer) (authlive.Strategy, error) {
	t.Helper()
	env := authlive.Env{
		Name:    "server bad",
		Purpose: "mcp",
		Secrets: secrets.New(secrets.Options{LookupEnv: func(k string) (string, bool) { return testSecret, k == "S" }}),
		Plugins: map[string]*plan.AuthPlugin{"bad": {Command: testPluginBin, SHA256: testPluginSum}},
		Logger:  slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	s, err := authlive.Build(context.Background(), env, &plan.Auth{Kind: "bad", Plugin: true, Settings: map[string]any{
		"mode": mode, "secret_ref": refTo("${env:S}"),
	}})
	if s != nil {
		t.Cleanup(func() { _ = s.Close() })
	}
	return s, err
}

func headersOf(s authlive.Strategy) error {
	req, _ := newRequest()
	_, err := s.Wrap(noopTransport{resp: okResponse()}).RoundTrip(req)
	return err
}

// TestRefusedSettings: a plugin that refuses its settings fails the build
// with its code, and leaves no process behind.
func TestRefusedSettings(t *testing.T) {
	_, err := buildTest(t, "refuse", &syncbuf.Buffer{})
	if !diag.Has(err, diag.MCPAuthStrategyInvalid) || plugin.PluginCode(err) != pluginsdk.CodeInvalidSettings {
		t.Fatalf("err = %v, want MCP_AUTH_STRATEGY_INVALID with INVALID_SETTINGS", err)
	}
	if pids := pidsOf(testPluginBin); len(pids) != 0 || plugin.LiveProcs() != 0 {
		t.Fatalf("processes %v (host holds %d) after a refused build", pids, plugin.LiveProcs())
	}
}

// TestLeakyPluginRedacted: a plugin that logs its secret and puts it in its
// errors has both blanked out by the host.
func TestLeakyPluginRedacted(t *testing.T) {
	log := &syncbuf.Buffer{}
	s, err := buildTest(t, "leak", log)
	if err != nil {
		t.Fatal(err)
	}
	err = headersOf(s)
	if plugin.PluginCode(err) != pluginsdk.CodeDenied {
		t.Fatalf("err = %v, want DENIED", err)
	}
	_ = s.Close()
	for where, text := range map[string]string{"error": err.Error(), "log": log.String()} {
		if strings.Contains(text, testSecret) {
			t.Errorf("%s contains the secret:\n%s", where, text)
		}
		if !strings.Contains(text, "[REDACTED]") {
			t.Errorf("%s shows no redaction; did the plugin leak at all?\n%s", where, text)
		}
	}
}

// TestCrashLoopBacksOff: a plugin that dies on every call is restarted once
// within the failing call, then not again until its backoff has passed.
func TestCrashLoopBacksOff(t *testing.T) {
	log := &syncbuf.Buffer{}
	s, err := buildTest(t, "crash", log)
	if err != nil {
		t.Fatal(err)
	}
	// Each need restarts the plugin at most once; the restarts back off
	// (0, 100ms, 200ms, …), so a need soon finds the backoff running and is
	// refused at once, starting nothing.
	var refused error
	for i := 0; i < 8 && refused == nil; i++ {
		err := headersOf(s)
		if !diag.Has(err, diag.MCPAuthStrategyInvalid) {
			t.Fatalf("need %d: %v, want MCP_AUTH_STRATEGY_INVALID", i, err)
		}
		if strings.Contains(err.Error(), "started again in") {
			refused = err
		}
	}
	if refused == nil {
		t.Fatal("no need was refused during a backoff")
	}
	if pids := pidsOf(testPluginBin); len(pids) != 0 {
		t.Errorf("a process %v runs during the backoff", pids)
	}
	if !strings.Contains(log.String(), "backoff=100ms") {
		t.Errorf("the log shows no growing backoff:\n%s", log)
	}
}

// TestSlowStartReleasedAtOnce: a build whose deadline passes while the
// plugin's process is still starting fails by that deadline, and releasing
// the plugin kills the start in flight instead of waiting it out (up to
// StartTimeout), leaving no process behind.
func TestSlowStartReleasedAtOnce(t *testing.T) {
	script := filepath.Join(t.TempDir(), "slow-plugin")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsleep 30\nexec "+testPluginBin+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := authlive.Env{
		Name: "server slow", Purpose: "mcp",
		Secrets: secrets.New(secrets.Options{}),
		Plugins: map[string]*plan.AuthPlugin{"slow": {Command: script, SHA256: fileSum(script)}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	s, err := authlive.Build(ctx, env, &plan.Auth{Kind: "slow", Plugin: true, Settings: map[string]any{"mode": "ok"}})
	if s != nil {
		_ = s.Close()
	}
	if d := time.Since(start); err == nil || d > 1500*time.Millisecond {
		t.Errorf("Build = %v after %v; want a failure at its 300ms deadline", err, d)
	}
	if pids := pidsOf(script); len(pids) != 0 || plugin.LiveProcs() != 0 {
		t.Errorf("processes %v (host holds %d) after the build failed", pids, plugin.LiveProcs())
	}
}

// TestCloseWhileCallHangs: closing a strategy whose plugin has a call
// hanging on an identity provider that never answers returns at once,
// rather than after go-plugin's graceful shutdown waited for that call.
func TestCloseWhileCallHangs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held, never answered
		}
	}()
	env := authlive.Env{
		Name: "server orders", Purpose: "mcp", Secrets: testSecrets(),
		Plugins: map[string]*plan.AuthPlugin{"agent-session": {Command: pluginBin, SHA256: pluginSum}},
	}
	s, err := authlive.Build(context.Background(), env, &plan.Auth{Kind: "agent-session", Plugin: true, Settings: map[string]any{
		"session_url": "http://" + ln.Addr().String() + "/auth/agent/session", "bootstrap_ref": refTo("${env:AGENT_BOOTSTRAP}"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := newRequest()
	if _, err := s.Wrap(noopTransport{resp: okResponse()}).RoundTrip(req.WithContext(ctx)); err == nil {
		t.Fatal("a request whose headers hang succeeded")
	}
	start := time.Now()
	_ = s.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v with the plugin's call hanging, want it at once", d)
	}
}

// TestSocketRemoved: a plugin's socket is made in a directory of the
// host's, under the host's temporary directory, and that directory is gone
// once the plugin is killed — a plugin killed while a call hangs cannot
// remove its socket itself.
func TestSocketRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s, err := buildTest(t, "hang", &syncbuf.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := newRequest()
	if _, err := s.Wrap(noopTransport{resp: okResponse()}).RoundTrip(req.WithContext(ctx)); err == nil {
		t.Fatal("a request whose headers hang succeeded")
	}
	socks, _ := filepath.Glob(filepath.Join(tmp, "heddle-plugin-*", "plugin*"))
	if len(socks) != 1 {
		t.Fatalf("sockets under the host's temporary directory while the plugin runs: %v, want one", socks)
	}
	_ = s.Close()
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in the host's temporary directory after the plugin was killed: %v", left)
	}
}
