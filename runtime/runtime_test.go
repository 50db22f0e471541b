package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
)

func open(t *testing.T, api string, agents map[string]string) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.Open(context.Background(), compilePlan(t, api, agents), runtime.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// text concatenates a result's text parts.
func text(res *mcp.CallToolResult) string { return plantest.Text(res) }

func toolNames(t *testing.T, ts *runtime.Toolset) []string {
	t.Helper()
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return names
}

func TestStdioListAndCall(t *testing.T) {
	rt := open(t, `
ai:
  mcp_servers:
    a:
      transport: stdio
      command: $TESTMCP
      args: [--tools, "search_docs,get_doc", --page-size, "2"]
`, map[string]string{"x": `capabilities: [{kind: mcp, server: a, include: ["search_*", "echo", "add"]}]`})
	ts, err := rt.Toolset("x")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := toolNames(t, ts), []string{"add", "echo", "search_docs"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	res, err := ts.Call(context.Background(), "echo", map[string]any{"text": "hello"})
	if err != nil || res.IsError || !strings.Contains(text(res), "hello") {
		t.Fatalf("echo = %v, %v", res, err)
	}
	// Qualified and dotted forms are accepted too.
	for _, name := range []string{"a__echo", "a.echo"} {
		res, err := ts.Call(context.Background(), name, map[string]any{"text": "q"})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", name, res, err)
		}
	}
	// A tool outside the grant is unknown.
	res, err = ts.Call(context.Background(), "get_doc", nil)
	if err != nil || runtime.RefusalCode(res) != diag.ToolUnknown {
		t.Fatalf("get_doc = %v, %v; want TOOL_UNKNOWN", res, err)
	}
}

func TestCrashMidCallRecovers(t *testing.T) {
	rt := open(t, `
ai:
  mcp_servers:
    a:
      transport: stdio
      command: $TESTMCP
      args: [--crash-after, "1"]
`, map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`})
	ts, _ := rt.Toolset("x")
	ctx := context.Background()
	if res, err := ts.Call(ctx, "echo", map[string]any{"text": "1"}); err != nil || res.IsError {
		t.Fatalf("first call: %v %v", res, err)
	}
	// The server exits on the second call. echo is read-only, so the call is
	// re-sent once the supervisor has reconnected.
	res, err := ts.Call(ctx, "echo", map[string]any{"text": "2"})
	if err != nil {
		t.Fatalf("second call: %v", err)
	}
	t.Logf("second call: %v %s", runtime.RefusalCode(res), text(res))
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err = ts.Call(ctx, "echo", map[string]any{"text": "3"})
		if err == nil && !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery: %v %v", res, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRequiredServerFailsStartup(t *testing.T) {
	p := compilePlan(t, `
ai:
  startup_timeout_ms: 1500
  mcp_servers:
    ok:
      transport: stdio
      command: $TESTMCP
    slow:
      transport: stdio
      command: $TESTMCP
      args: [--hang-handshake]
    missing:
      transport: stdio
      command: /nonexistent/heddle-testmcp
`, map[string]string{"x": `capabilities: [{kind: mcp, server: ok}, {kind: mcp, server: slow}, {kind: mcp, server: missing}]`})
	start := time.Now()
	rt, err := runtime.Open(context.Background(), p, runtime.Options{})
	if err == nil {
		rt.Close()
		t.Fatal("Open succeeded")
	}
	if d := time.Since(start); d > 1500*time.Millisecond+500*time.Millisecond {
		t.Errorf("start-up took %v", d)
	}
	var se *runtime.StartupError
	if !errors.As(err, &se) || len(se.Failures) != 2 {
		t.Fatalf("err = %v", err)
	}
	if !diag.Has(err, diag.MCPServerUnreachable) {
		t.Errorf("no MCP_SERVER_UNREACHABLE in %v", err)
	}
	for _, name := range []string{"slow", "missing"} {
		if !strings.Contains(err.Error(), "server "+name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

// TestToolsetOfAnUnknownAgent: asking for an agent the plan does not have
// is AGENT_UNKNOWN, not a tool's code.
func TestToolsetOfAnUnknownAgent(t *testing.T) {
	rt, err := runtime.Open(context.Background(), &plan.Plan{Startup: plan.Startup{TimeoutMS: 1000, RemoteClients: "required"}, Agents: map[string]*plan.Agent{}}, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := rt.Toolset("nobody"); !diag.Has(err, diag.AgentUnknown) {
		t.Errorf("Toolset(nobody) = %v, want AGENT_UNKNOWN", err)
	}
}
