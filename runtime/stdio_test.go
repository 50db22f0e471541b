package runtime_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/proctest"
	"github.com/heddlehq/heddle/runtime"
)

// TestStdioEnvAllowList: a stdio child gets the allow-list (PATH, HOME, …)
// from the worker plus its declared env, and nothing else of the worker's
// environment.
func TestStdioEnvAllowList(t *testing.T) {
	// Not parallel: t.Setenv.
	t.Setenv("HEDDLE_TEST_SECRET", "x")
	t.Setenv("HOME", "/heddle-test-home")
	rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a:
      transport: stdio
      command: $TESTMCP
      env: {GIVEN: "v"}
`, map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`}, runtime.Options{})
	ts := toolsetOf(t, rt, "x")
	for _, tc := range []struct {
		name, want string
		set        bool
	}{
		{"HEDDLE_TEST_SECRET", "", false},
		{"GIVEN", "v", true},
		{"PATH", os.Getenv("PATH"), true},
		{"HOME", "/heddle-test-home", true},
	} {
		res := mustCall(t, ts, "env", map[string]any{"name": tc.name})
		got := structured(t, res)
		if got["value"] != tc.want || got["set"] != tc.set {
			t.Errorf("env %s = %v (set %v), want %q (set %v)", tc.name, got["value"], got["set"], tc.want, tc.set)
		}
	}
}

// TestStdioNoOrphans: Close kills the server and what it started: a
// grandchild that ignores SIGTERM and stdin EOF is gone too.
func TestStdioNoOrphans(t *testing.T) {
	t.Parallel()
	rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP}
`, map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`}, runtime.Options{})
	ts := toolsetOf(t, rt, "x")
	pid := intField(t, mustCall(t, ts, "pid", nil), "pid")
	pgid := intField(t, mustCall(t, ts, "pid", nil), "pgid")
	child := intField(t, mustCall(t, ts, "spawn_child", nil), "pid")
	if pgid != pid {
		t.Errorf("server pgid %d, want its own group %d", pgid, pid)
	}
	if pgid == syscall.Getpgrp() {
		t.Errorf("server shares the worker's process group")
	}
	if !proctest.Alive(pid) || !proctest.Alive(child) {
		t.Fatalf("server %d or grandchild %d not running before Close", pid, child)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, 3*time.Second, pid, child)
}
