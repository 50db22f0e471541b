package runtime_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
)

// TestLockPinsDefinitions: a runtime opened with a lock written from the same
// server starts; a pinned tool whose definition changed fails start-up with
// TOOL_DEFINITION_CHANGED.
func TestLockPinsDefinitions(t *testing.T) {
	api := `
ai:
  mcp_servers:
    a:
      transport: stdio
      command: $TESTMCP
      args: [--tools, "search_docs"]
`
	p := compilePlan(t, api, map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`})
	rt, err := runtime.Open(context.Background(), p, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lock := rt.Lock()
	_ = rt.Close()
	if len(lock.Servers["a"].Tools) == 0 {
		t.Fatal("the lock pins no tool")
	}

	rt, err = runtime.Open(context.Background(), p, runtime.Options{Lock: lock})
	if err != nil {
		t.Fatalf("unchanged tools: %v", err)
	}
	_ = rt.Close()

	pin := lock.Servers["a"].Tools["echo"]
	pin.Description = "sha256:0000"
	lock.Servers["a"].Tools["echo"] = pin
	rt, err = runtime.Open(context.Background(), p, runtime.Options{Lock: lock})
	if err == nil {
		_ = rt.Close()
		t.Fatal("Open succeeded with a changed tool")
	}
	if !diag.Has(err, diag.ToolDefinitionChanged) {
		t.Fatalf("err = %v, want TOOL_DEFINITION_CHANGED", err)
	}
}

// TestStartupTimeoutWhileListing: a server that connects in time but lists
// its tools too slowly fails start-up with STARTUP_TIMEOUT, at the
// deadline. It runs in a synctest bubble, the server in process on an
// in-memory transport (Dial stands in for the plan's command), so the
// deadline is met to the millisecond and takes no time.
func TestStartupTimeoutWhileListing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compilePlan(t, `
ai:
  startup_timeout_ms: 1000
  mcp_servers:
    a:
      transport: stdio
      command: $TESTMCP
`, map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`})
		start := time.Now()
		rt, err := runtime.Open(context.Background(), p, runtime.Options{Dial: testmcp.DialInMemory(t, &testmcp.Options{ListDelay: 5 * time.Second})})
		if err == nil {
			_ = rt.Close()
			t.Fatal("Open succeeded")
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("Open took %v, want the 1s deadline", d)
		}
		if !diag.Has(err, diag.StartupTimeout) {
			t.Fatalf("err = %v, want STARTUP_TIMEOUT", err)
		}
	})
}
