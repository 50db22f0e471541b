package runtime_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// deferredAPI is a deployment of two test servers: a whose tools an agent
// defers, b whose tools it lists.
const deferredAPI = `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP}
    b: {transport: stdio, command: $TESTMCP, args: [--tools=b_echo, --no-fixed-tools]}
`

func viewNames(t *testing.T, v *runtime.View) []string {
	t.Helper()
	tools, err := v.Tools(context.Background())
	if err != nil {
		t.Fatalf("View.Tools: %v", err)
	}
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	return out
}

func viewCall(t *testing.T, v *runtime.View, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := v.Call(heddle.WithCaller(context.Background(), heddle.Identity{Subject: "u"}), name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// searchNames returns the names a search_tools result lists.
func searchNames(t *testing.T, res *mcp.CallToolResult) []string {
	t.Helper()
	if res.IsError {
		t.Fatalf("search_tools: refusal %s: %s", runtime.RefusalCode(res), text(res))
	}
	var out struct {
		Tools []struct {
			Name, Description string
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(text(res)), &out); err != nil {
		t.Fatalf("search_tools text: %v", err)
	}
	var names []string
	for _, tl := range out.Tools {
		if tl.Description == "" {
			t.Errorf("search_tools: %s has no description", tl.Name)
		}
		names = append(names, tl.Name)
	}
	return names
}

// TestDeferredTools: search_tools finds a deferred tool by a word of its
// description; load_tools adds it to one conversation's view and no
// other; it is then callable, and still governed by the agent's rules: a
// CEL rule that denies some of its calls refuses them TOOL_DENIED once
// loaded.
func TestDeferredTools(t *testing.T) {
	t.Parallel()
	rt := openWith(t, deferredAPI, map[string]string{"x": `
capabilities:
  - {kind: mcp, server: a, include: [echo, add, image, env], defer: true}
  - {kind: mcp, server: b, include: [b_echo]}
policies:
  rules:
    - {when: 'tool.name == "env" && args.name == "HOME"', effect: deny}
`}, runtime.Options{})
	ts := toolsetOf(t, rt, "x")

	// The operators' list has every tool, the deferred ones marked.
	all, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range all {
		if want := tl.Server == "a"; tl.Deferred != want {
			t.Errorf("Toolset.Tools: %s deferred %v, want %v", tl.Name, tl.Deferred, want)
		}
	}

	one, other := ts.NewView(), ts.NewView()
	want := []string{"b_echo", runtime.LoadToolsName, runtime.SearchToolsName}
	if got := viewNames(t, one); !slices.Equal(got, want) {
		t.Fatalf("a new view lists %v, want %v", got, want)
	}

	// "numbers" is a word of add's description only ("Adds two numbers").
	if got := searchNames(t, viewCall(t, one, runtime.SearchToolsName, map[string]any{"query": "sum two numbers"})); len(got) == 0 || got[0] != "add" {
		t.Fatalf("search_tools(sum two numbers) = %v, want add first", got)
	}
	// A tool not loaded yet cannot be called: the model is told to load it.
	if res := viewCall(t, one, "add", map[string]any{"a": 1, "b": 2}); runtime.RefusalCode(res) != diag.ToolUnknown {
		t.Fatalf("add before load_tools: code %q, want TOOL_UNKNOWN", runtime.RefusalCode(res))
	}

	res := viewCall(t, one, runtime.LoadToolsName, map[string]any{"names": []any{"add", "env", "no_such_tool"}})
	if res.IsError {
		t.Fatalf("load_tools: %s", text(res))
	}
	var loaded struct {
		Tools []struct {
			Name        string `json:"name"`
			InputSchema any    `json:"inputSchema"`
		} `json:"tools"`
		Unknown []string `json:"unknown"`
	}
	if err := json.Unmarshal([]byte(text(res)), &loaded); err != nil {
		t.Fatal(err)
	}
	if len(loaded.Tools) != 2 || loaded.Tools[0].Name != "add" || loaded.Tools[0].InputSchema == nil || !slices.Equal(loaded.Unknown, []string{"no_such_tool"}) {
		t.Fatalf("load_tools = %s; want add and env with their schemas, no_such_tool unknown", text(res))
	}
	if got := one.Loaded(); !slices.Equal(got, []string{"add", "env"}) {
		t.Errorf("Loaded() = %v, want [add env]", got)
	}
	want = []string{"add", "b_echo", "env", runtime.LoadToolsName, runtime.SearchToolsName}
	if got := viewNames(t, one); !slices.Equal(got, want) {
		t.Errorf("after load_tools the view lists %v, want %v", got, want)
	}

	// Loaded: callable in this view.
	if res := viewCall(t, one, "add", map[string]any{"a": 1, "b": 2}); res.IsError {
		t.Fatalf("add after load_tools: %s", text(res))
	}
	// Still governed by the rules.
	if res := viewCall(t, one, "env", map[string]any{"name": "HOME"}); runtime.RefusalCode(res) != diag.ToolDenied {
		t.Fatalf("env after load_tools: code %q, want TOOL_DENIED", runtime.RefusalCode(res))
	}

	// The other conversation loaded nothing.
	if got := viewNames(t, other); !slices.Equal(got, []string{"b_echo", runtime.LoadToolsName, runtime.SearchToolsName}) {
		t.Errorf("another view lists %v; want no loaded tool", got)
	}
	if res := viewCall(t, other, "add", map[string]any{"a": 1, "b": 2}); runtime.RefusalCode(res) != diag.ToolUnknown {
		t.Errorf("add in another view: code %q, want TOOL_UNKNOWN", runtime.RefusalCode(res))
	}
	// Tools that are not deferred are called in any view.
	if res := viewCall(t, other, "b_echo", map[string]any{"text": "hi"}); res.IsError {
		t.Errorf("b_echo: %s", text(res))
	}
}

// TestViewWithoutDeferredGrants: a view of a toolset that defers nothing is
// the toolset: the same tools, no search_tools or load_tools.
func TestViewWithoutDeferredGrants(t *testing.T) {
	t.Parallel()
	rt := openWith(t, deferredAPI, map[string]string{"x": `capabilities: [{kind: mcp, server: a, include: [echo, add]}]`}, runtime.Options{})
	ts := toolsetOf(t, rt, "x")
	v := ts.NewView()
	if got := viewNames(t, v); !slices.Equal(got, []string{"add", "echo"}) {
		t.Fatalf("view lists %v, want [add echo]", got)
	}
	if res := viewCall(t, v, runtime.SearchToolsName, map[string]any{"query": "echo"}); runtime.RefusalCode(res) != diag.ToolUnknown {
		t.Errorf("search_tools without deferred grants: code %q, want TOOL_UNKNOWN", runtime.RefusalCode(res))
	}
	if res := viewCall(t, v, "add", map[string]any{"a": 1, "b": 2}); res.IsError {
		t.Errorf("add: %s", text(res))
	}
}

// TestDeferredMetaToolArgs: the view's own tools check their arguments
// against their input schemas, and bound what they return.
func TestDeferredMetaToolArgs(t *testing.T) {
	t.Parallel()
	rt := openWith(t, deferredAPI, map[string]string{"x": `capabilities: [{kind: mcp, server: a, defer: true}]`}, runtime.Options{})
	v := toolsetOf(t, rt, "x").NewView()
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{runtime.SearchToolsName, map[string]any{}},
		{runtime.SearchToolsName, map[string]any{"query": 3}},
		{runtime.SearchToolsName, map[string]any{"query": "echo", "limit": 0}},
		{runtime.SearchToolsName, map[string]any{"query": "echo", "other": true}},
		{runtime.LoadToolsName, map[string]any{"names": []any{}}},
		{runtime.LoadToolsName, map[string]any{"names": "echo"}},
	} {
		if res := viewCall(t, v, c.name, c.args); runtime.RefusalCode(res) != diag.ToolArgsInvalid {
			t.Errorf("%s(%v): code %q, want TOOL_ARGS_INVALID", c.name, c.args, runtime.RefusalCode(res))
		}
	}
	// "the" matches every description of the test server; limit bounds it.
	if got := searchNames(t, viewCall(t, v, runtime.SearchToolsName, map[string]any{"query": "the returns", "limit": 2})); len(got) != 2 {
		t.Errorf("search_tools with limit 2 returned %v", got)
	}
	if got := searchNames(t, viewCall(t, v, runtime.SearchToolsName, map[string]any{"query": "zzzz qqqq"})); len(got) != 0 {
		t.Errorf("search_tools for words no tool has returned %v", got)
	}
}

// TestDeferredNameClash: an agent with a real tool called search_tools
// keeps it; the view's own is qualified as heddle__search_tools.
func TestDeferredNameClash(t *testing.T) {
	t.Parallel()
	rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP}
    s: {transport: stdio, command: $TESTMCP, args: [--tools=search_tools, --no-fixed-tools]}
`, map[string]string{"x": `
capabilities:
  - {kind: mcp, server: a, include: [add], defer: true}
  - {kind: mcp, server: s, include: [search_tools]}
`}, runtime.Options{})
	v := toolsetOf(t, rt, "x").NewView()
	want := []string{"heddle__search_tools", runtime.LoadToolsName, "search_tools"}
	if got := viewNames(t, v); !slices.Equal(got, want) {
		t.Fatalf("view lists %v, want %v", got, want)
	}
	if got := searchNames(t, viewCall(t, v, "heddle__search_tools", map[string]any{"query": "numbers"})); !slices.Equal(got, []string{"add"}) {
		t.Errorf("heddle__search_tools(numbers) = %v, want [add]", got)
	}
	// The real one is the server's echo.
	if res := viewCall(t, v, "search_tools", map[string]any{"text": "mine"}); res.IsError || text(res) != `{"text":"mine"}` {
		t.Errorf("search_tools (the server's) = %q, want its echo", text(res))
	}
}

// TestViewConcurrent: one conversation's view serves concurrent searches,
// loads, listings and calls.
func TestViewConcurrent(t *testing.T) {
	t.Parallel()
	rt := openWith(t, deferredAPI, map[string]string{"x": `capabilities: [{kind: mcp, server: a, include: [echo, add], defer: true}]`}, runtime.Options{})
	v := toolsetOf(t, rt, "x").NewView()
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 20 {
				if _, err := v.Call(ctx, runtime.SearchToolsName, map[string]any{"query": "text numbers"}); err != nil {
					t.Error(err)
				}
				if _, err := v.Call(ctx, runtime.LoadToolsName, map[string]any{"names": []any{[]string{"echo", "add"}[i%2]}}); err != nil {
					t.Error(err)
				}
				if _, err := v.Tools(ctx); err != nil {
					t.Error(err)
				}
				_ = v.Loaded()
			}
		})
	}
	wg.Wait()
	if got := v.Loaded(); !slices.Equal(got, []string{"add", "echo"}) {
		t.Errorf("Loaded() = %v", got)
	}
	if res := viewCall(t, v, "echo", map[string]any{"text": "hi"}); res.IsError {
		t.Errorf("echo: %s", text(res))
	}
}
