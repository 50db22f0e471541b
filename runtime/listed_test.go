package runtime_test

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
)

// TestListsPerCaller: a tool a caller may never call, whatever the
// arguments, is not listed to that caller — in Tools, in a conversation's
// view, in what search_tools finds and load_tools loads — and calling it
// is TOOL_UNKNOWN, as for a name that does not exist; a rule that depends
// on an argument keeps the tool listed, and denies the calls it matches
// with TOOL_DENIED. A context with no caller is an operator's: it is
// listed everything.
func TestListsPerCaller(t *testing.T) {
	t.Parallel()
	rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, args: [--destructive, "add_tool,remove_tool"]}
    d: {transport: stdio, command: $TESTMCP, args: [--tools=d_drop, --no-fixed-tools, --destructive, d_drop]}
`, map[string]string{"x": `
capabilities:
  - {kind: mcp, server: a, include: [echo, add_tool, remove_tool]}
  - {kind: mcp, server: d, defer: true}
policies:
  approval: allow
  rules:
    - {when: 'tool.name == "remove_tool" && args.name == "echo"', effect: deny}
    - {when: 'tool.destructive && !("sre" in caller.roles)', effect: deny}
`}, runtime.Options{})
	ts := toolsetOf(t, rt, "x")
	sre := heddle.WithCaller(context.Background(), heddle.Identity{Subject: "alice", Roles: []string{"sre"}})
	dev := heddle.WithCaller(context.Background(), heddle.Identity{Subject: "bob", Roles: []string{"dev"}})

	names := func(ctx context.Context) []string {
		t.Helper()
		tools, err := ts.Tools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Name)
		}
		return out
	}
	all := []string{"add_tool", "d_drop", "echo", "remove_tool"}
	if got := names(sre); !slices.Equal(got, all) {
		t.Errorf("an SRE is listed %v, want %v", got, all)
	}
	if got := names(context.Background()); !slices.Equal(got, all) {
		t.Errorf("an operator is listed %v, want %v", got, all)
	}
	// remove_tool: the first rule denies some of its calls (name echo) and
	// lets the others reach the second, which denies them all for bob:
	// every call of it by bob is denied, so it is hidden from him.
	if got, want := names(dev), []string{"echo"}; !slices.Equal(got, want) {
		t.Errorf("a developer is listed %v, want %v", got, want)
	}

	call := func(ctx context.Context, name string, args map[string]any) diag.Code {
		t.Helper()
		res, err := ts.Call(ctx, name, args)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return runtime.RefusalCode(res)
	}
	if got := call(dev, "add_tool", map[string]any{"name": "made"}); got != diag.ToolUnknown {
		t.Errorf("a developer's add_tool: %q, want TOOL_UNKNOWN", got)
	}
	if got := call(dev, "no_such_tool", nil); got != diag.ToolUnknown {
		t.Errorf("a developer's no_such_tool: %q, want TOOL_UNKNOWN", got)
	}
	if got := call(context.Background(), "add_tool", map[string]any{"name": "made"}); got != diag.ToolDenied {
		t.Errorf("an operator's add_tool: %q, want TOOL_DENIED", got)
	}
	// A rule that depends on an argument keeps the tool listed to the SRE,
	// and denies the call it matches.
	if got := call(sre, "remove_tool", map[string]any{"name": "echo"}); got != diag.ToolDenied {
		t.Errorf("an SRE's remove_tool(echo): %q, want TOOL_DENIED", got)
	}
	if got := call(sre, "add_tool", map[string]any{"name": "made"}); got != "" {
		t.Errorf("an SRE's add_tool: %q, want it to run", got)
	}

	// A conversation: the deferred d_drop is neither found nor loaded for
	// the developer, and calling it is TOOL_UNKNOWN, not "load it first".
	v := ts.NewView()
	if got := searchNames(t, mustViewCall(t, dev, v, runtime.SearchToolsName, map[string]any{"query": "d_drop"})); len(got) != 0 {
		t.Errorf("search_tools(d_drop) for a developer found %v", got)
	}
	if got := searchNames(t, mustViewCall(t, sre, v, runtime.SearchToolsName, map[string]any{"query": "d_drop"})); !slices.Equal(got, []string{"d_drop"}) {
		t.Errorf("search_tools(d_drop) for an SRE found %v", got)
	}
	if res := mustViewCall(t, dev, v, "d_drop", nil); runtime.RefusalCode(res) != diag.ToolUnknown || text(res) != `TOOL_UNKNOWN: there is no tool "d_drop"; use one of the tools listed` {
		t.Errorf("a developer's d_drop: %s", text(res))
	}
	if unknown, err := v.Load(dev, "d_drop"); err != nil || !slices.Equal(unknown, []string{"d_drop"}) {
		t.Errorf("Load(d_drop) for a developer: unknown %v, %v", unknown, err)
	}
	if got := v.Loaded(); len(got) != 0 {
		t.Errorf("the view loaded %v for a developer", got)
	}
}

func mustViewCall(t *testing.T, ctx context.Context, v *runtime.View, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := v.Call(ctx, name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}
