package runtime_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	if len(lock.Kinds["mcp"]["a"].Tools) == 0 {
		t.Fatal("the lock pins no tool")
	}

	rt, err = runtime.Open(context.Background(), p, runtime.Options{Lock: lock})
	if err != nil {
		t.Fatalf("unchanged tools: %v", err)
	}
	_ = rt.Close()

	pin := lock.Kinds["mcp"]["a"].Tools["echo"]
	pin.SHA256 = "0000"
	lock.Kinds["mcp"]["a"].Tools["echo"] = pin
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
		rt, err := runtime.Open(context.Background(), p, runtime.Options{Kinds: testkinds.InMemory(t, &testmcp.Options{ListDelay: 5 * time.Second})})
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

// TestLockDrift: every kind of change a review must see is named — a
// changed field, a removed tool, a tool renamed with its definition kept, a
// new tool only when something offers it — and a lock survives being
// encoded and parsed.
func TestLockDrift(t *testing.T) {
	tool := func(name, desc string) *mcp.Tool {
		return &mcp.Tool{Name: name, Description: desc, InputSchema: map[string]any{"type": "object"}}
	}
	pinned := []*mcp.Tool{tool("a", "one"), tool("b", "two"), tool("c", "three")}
	l := &runtime.Lock{Version: runtime.LockVersion, Kinds: map[string]driver.Pins{"mcp": {"s": {Tools: map[string]driver.Pin{}}}}}
	for _, tt := range pinned {
		l.Kinds["mcp"]["s"].Tools[tt.Name] = driver.PinOf(tt)
	}
	b, err := l.Encode()
	if err != nil {
		t.Fatal(err)
	}
	l, err = runtime.ParseLock("heddle.lock", b)
	if err != nil {
		t.Fatal(err)
	}
	if d := l.Pins("mcp").Drift("s", pinned, nil); len(d) != 0 {
		t.Fatalf("unchanged tools drift: %v", d)
	}
	changedA := tool("a", "ONE")
	changedA.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
	now := []*mcp.Tool{changedA, tool("d", "three"), tool("e", "new"), tool("hidden", "new")}
	got := []string{}
	for _, d := range l.Pins("mcp").Drift("s", now, func(name string) bool { return name != "hidden" }) {
		got = append(got, d.String())
	}
	want := []string{"s: a: changed annotations, description", "s: b: removed", "s: c: renamed to d", "s: e: new"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("drift (-want +got):\n%s", diff)
	}
}

// TestLockFormat: a version 1 lock, and a definition edited without its
// hash, are LOCK_INVALID.
func TestLockFormat(t *testing.T) {
	for name, body := range map[string]string{
		"v1":     `{"version": 1, "servers": {}}`,
		"v9":     `{"version": 9, "servers": {}}`,
		"edited": `{"version": 2, "servers": {"s": {"tools": {"a": {"sha256": "00", "definition": {"name": "a"}}}}}}`,
		"named":  `{"version": 2, "servers": {"s": {"tools": {"a": {"sha256": "00", "definition": {"name": "b"}}}}}}`,
		"v3":     `{"version": 3, "kinds": {"mcp": {"s": {"tools": {"a": {"sha256": "00", "definition": {"name": "a"}}}}}}}`,
		"junk":   `nope`,
	} {
		if _, err := runtime.ParseLock("x.lock", []byte(body)); !diag.Has(err, diag.LockInvalid) {
			t.Errorf("%s: err = %v, want LOCK_INVALID", name, err)
		}
	}
}

// TestLockVersion2: a version 2 lock, which pinned MCP servers only, reads
// as version 3 with its servers under the mcp kind, and is written back as
// version 3.
func TestLockVersion2(t *testing.T) {
	pin := driver.PinOf(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}})
	v2, err := json.Marshal(map[string]any{"version": 2, "servers": map[string]any{"s": map[string]any{"tools": map[string]driver.Pin{"echo": pin}}}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := runtime.ParseLock("heddle.lock", v2)
	if err != nil {
		t.Fatal(err)
	}
	if l.Version != runtime.LockVersion || l.Kinds["mcp"]["s"].Tools["echo"].SHA256 != pin.SHA256 {
		t.Fatalf("version 2 read as %+v", l)
	}
	b, err := l.Encode()
	if err != nil || !strings.Contains(string(b), `"version": 3`) || !strings.Contains(string(b), `"kinds"`) {
		t.Fatalf("written back as %s (%v)", b, err)
	}
	if again, err := runtime.ParseLock("heddle.lock", b); err != nil || !again.Pins("mcp").Pinned("s", &mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}) {
		t.Fatalf("version 3 read back: %v", err)
	}
}
