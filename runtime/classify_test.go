package runtime_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// shapeWant is how each tool of testmcp.AnnotationShapes is classified by
// MCP's rule: destructiveHint: true is destructive; without a
// destructiveHint, readOnlyHint: false is; a tool with neither is not.
var shapeWant = map[string]struct{ destructive, readOnly, idempotent bool }{
	"hints_none":                {},
	"hints_title":               {},
	"hints_idempotent":          {idempotent: true},
	"hints_ro_absent_de_absent": {},
	"hints_ro_absent_de_true":   {destructive: true},
	"hints_ro_absent_de_false":  {},
	"hints_ro_true_de_absent":   {readOnly: true},
	"hints_ro_true_de_true":     {destructive: true, readOnly: true},
	"hints_ro_true_de_false":    {readOnly: true},
	"hints_ro_false_de_absent":  {destructive: true},
	"hints_ro_false_de_true":    {destructive: true},
	"hints_ro_false_de_false":   {},
	"hints_ro_null_de_null":     {},
}

// shapeServers are the test server with every annotation shape, over each
// transport heddle builds: the api.yaml entry of server "s".
func shapeServers(t *testing.T) map[string]string {
	t.Helper()
	ts := httptest.NewServer(testmcp.Handler(&testmcp.Options{AnnotationShapes: true, NoFixedTools: true}))
	t.Cleanup(ts.Close)
	js := httptest.NewServer(testmcp.Handler(&testmcp.Options{AnnotationShapes: true, NoFixedTools: true, JSONResponse: true}))
	t.Cleanup(js.Close)
	return map[string]string{
		"stdio":     `{transport: stdio, command: $TESTMCP, args: [--annotation-shapes, --no-fixed-tools]`,
		"http":      `{url: "` + ts.URL + testmcp.StreamablePath + `"`,
		"http-json": `{url: "` + js.URL + testmcp.StreamablePath + `"`,
		"sse":       `{transport: sse, url: "` + ts.URL + testmcp.SSEPath + `"`,
	}
}

// TestClassifyByWhatTheServerSent: over stdio, Streamable HTTP (event
// streams and JSON bodies) and SSE, each annotation shape a server sends is
// classified by MCP's rule, a hint that is absent is told from one that is
// false, and under approval: ask a destructive tool is refused
// TOOL_APPROVAL_REQUIRED while every other tool runs.
func TestClassifyByWhatTheServerSent(t *testing.T) {
	for transport, entry := range shapeServers(t) {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			rt := openWith(t, "ai:\n  startup_timeout_ms: 10000\n  mcp_servers:\n    s: "+entry+"}\n",
				map[string]string{"x": "capabilities: [{kind: mcp, server: s}]\npolicies: {approval: ask}\n"}, runtime.Options{})
			checkClasses(t, toolsetOf(t, rt, "x"), func(name string) (bool, bool, bool, driver.ClassifiedBy) {
				w := shapeWant[name]
				return w.destructive, w.readOnly, w.idempotent, driver.ClassifiedByServer
			})
		})
	}
}

// TestClassifyOverrides: the operator's tools: map decides over the
// server's claim — an exact name over a glob, a longer glob over a shorter
// one, the map over the read_only_tools/destructive_tools lists — and
// trust_annotations: false makes every tool it does not override
// destructive, over every transport.
func TestClassifyOverrides(t *testing.T) {
	overrides := `, trust_annotations: false,
      read_only_tools: ["hints_ro_false_*"], destructive_tools: [hints_title],
      tools: {"hints_ro_*": {read_only: true}, "hints_ro_true_*": {destructive: true},
              hints_ro_true_de_false: {read_only: true, idempotent: true}, hints_none: {destructive: false}}`
	want := func(name string) (bool, bool, bool, driver.ClassifiedBy) {
		switch {
		case name == "hints_none": // exact; the rest untrusted
			return false, false, false, driver.ClassifiedByOverride
		case name == "hints_title": // destructive_tools
			return true, false, false, driver.ClassifiedByOverride
		case name == "hints_ro_true_de_false": // exact over both globs
			return false, true, true, driver.ClassifiedByOverride
		case strings.HasPrefix(name, "hints_ro_true_"): // the longer glob
			return true, false, false, driver.ClassifiedByOverride
		case strings.HasPrefix(name, "hints_ro_"): // the map over read_only_tools
			return false, true, false, driver.ClassifiedByOverride
		}
		return true, false, false, driver.ClassifiedByUntrusted
	}
	for transport, entry := range shapeServers(t) {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			rt := openWith(t, "ai:\n  startup_timeout_ms: 10000\n  mcp_servers:\n    s: "+entry+overrides+"}\n",
				map[string]string{"x": "capabilities: [{kind: mcp, server: s}]\npolicies: {approval: ask}\n"}, runtime.Options{})
			checkClasses(t, toolsetOf(t, rt, "x"), want)
		})
	}
}

// checkClasses checks every tool's classification against want, and that
// approval: ask refuses exactly the destructive ones.
func checkClasses(t *testing.T, ts *runtime.Toolset, want func(string) (destructive, readOnly, idempotent bool, by driver.ClassifiedBy)) {
	t.Helper()
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != len(testmcp.AnnotationShapes) {
		t.Fatalf("%d tools, want %d", len(tools), len(testmcp.AnnotationShapes))
	}
	for _, tool := range tools {
		d, ro, idem, by := want(tool.OriginalName)
		if tool.Destructive != d || tool.ReadOnly != ro || tool.Idempotent != idem || tool.ClassifiedBy != by {
			t.Errorf("%s: destructive %v, read-only %v, idempotent %v, by %q; want %v, %v, %v, %q",
				tool.Name, tool.Destructive, tool.ReadOnly, tool.Idempotent, tool.ClassifiedBy, d, ro, idem, by)
		}
		res, err := ts.Call(context.Background(), tool.Name, map[string]any{"n": 1})
		if err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		switch code := runtime.RefusalCode(res); {
		case d && code != diag.ToolApprovalRequired:
			t.Errorf("%s is destructive: code %q, want %s", tool.Name, code, diag.ToolApprovalRequired)
		case !d && res.IsError:
			t.Errorf("%s is not destructive: refused %q: %s", tool.Name, code, text(res))
		}
	}
}

// TestLockHoldsAnnotationFlip: a server that drops the destructiveHint of a
// pinned tool (true, then readOnlyHint: true) does not get the tool past
// approval by it: the definition no longer matches heddle.lock, and
// start-up fails TOOL_DEFINITION_CHANGED until the lock is renewed.
func TestLockHoldsAnnotationFlip(t *testing.T) {
	open := func(args string, lock *runtime.Lock) (*runtime.Runtime, error) {
		p := compilePlan(t, "ai:\n  mcp_servers:\n    a: {transport: stdio, command: $TESTMCP, args: ["+args+"]}\n",
			map[string]string{"x": "capabilities: [{kind: mcp, server: a}]\npolicies: {approval: ask}\n"})
		return runtime.Open(context.Background(), p, runtime.Options{Lock: lock})
	}
	rt, err := open("--destructive, echo", nil)
	if err != nil {
		t.Fatal(err)
	}
	lock := rt.Lock()
	_ = rt.Close()

	rt, err = open("", lock)
	if err == nil {
		_ = rt.Close()
		t.Fatal("Open succeeded with a tool whose destructiveHint flipped")
	}
	if !diag.Has(err, diag.ToolDefinitionChanged) {
		t.Fatalf("err = %v, want TOOL_DEFINITION_CHANGED", err)
	}

	rt, err = open("", nil) // the lock renewed: the server's new claim stands
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ts := toolsetOf(t, rt, "x")
	mustCall(t, ts, "echo", map[string]any{"text": "hi"})
}

// TestRuleOnClassifiedBy: rules see where a classification came from, so
// an operator can deny what only an untrusted server's word would allow.
func TestRuleOnClassifiedBy(t *testing.T) {
	rt := openWith(t, `
ai:
  mcp_servers:
    s: {transport: stdio, command: $TESTMCP, args: [--annotation-shapes, --no-fixed-tools], trust_annotations: false,
        tools: {hints_title: {destructive: false}}}
`, map[string]string{"x": "capabilities: [{kind: mcp, server: s}]\npolicies: {approval: allow, rules: [{when: 'tool.classified_by == \"untrusted\"', effect: deny}]}\n"},
		runtime.Options{})
	ts := toolsetOf(t, rt, "x")
	mustCall(t, ts, "hints_title", map[string]any{})
	wantRefusal(t, ts, "hints_ro_true_de_absent", map[string]any{}, diag.ToolDenied)
}
