package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRefresh: Refresh lists the servers again now; one that cannot is
// named in the result with its code and stays unavailable, and the others
// are untouched. A name the runtime did not open is MCP_SERVER_UNKNOWN.
func TestRefresh(t *testing.T) {
	rt := openWith(t, `
ai:
  mcp_servers:
    good: {transport: stdio, command: $TESTMCP}
    flaky: {transport: stdio, command: $TESTMCP, args: [--fail-list-after, "1"]}
`, map[string]string{"x": `capabilities: [{kind: mcp, server: good}, {kind: mcp, server: flaky}]`}, runtime.Options{})
	if u := rt.Unavailable(); len(u) != 0 {
		t.Fatalf("unavailable after start-up: %v", u)
	}
	res, err := mcplive.Refresh(context.Background(), rt)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || !diag.Has(res["flaky"], diag.MCPListFailed) {
		t.Fatalf("Refresh: unavailable %v, want flaky with MCP_LIST_FAILED", res)
	}
	if u := rt.Unavailable(); u["flaky"] != diag.MCPListFailed || len(u) != 1 {
		t.Errorf("health after Refresh: unavailable %v, want flaky alone", u)
	}
	ts := toolsetOf(t, rt, "x")
	mustCall(t, ts, "good__echo", map[string]any{"text": "still here"})

	res, err = mcplive.Refresh(context.Background(), rt, "good")
	if err != nil || len(res) != 0 {
		t.Errorf("Refresh(good) = %v, %v; want nothing unavailable", res, err)
	}
	if _, err := mcplive.Refresh(context.Background(), rt, "good", "nosuch"); !diag.Has(err, diag.MCPServerUnknown) {
		t.Errorf("Refresh(nosuch): err = %v, want MCP_SERVER_UNKNOWN", err)
	}
}

// TestRefreshConnectsLazy: Refresh connects a lazy server that was not
// used yet.
func TestRefreshConnectsLazy(t *testing.T) {
	name := fmt.Sprintf("lazy-refresh-%d", time.Now().UnixNano())
	api := lazyAPI(name, "strict", "$TESTMCP")
	rt := openWith(t, api, lazyAgents, runtime.Options{Lock: lazyLock(t, api)})
	if st := rt.Health().Dependencies[0].State; st != driver.StateIdle {
		t.Fatalf("lz is %s, want idle", st)
	}
	if res, err := mcplive.Refresh(context.Background(), rt, "lz"); err != nil || len(res) != 0 {
		t.Fatalf("Refresh = %v, %v", res, err)
	}
	if st := rt.Health().Dependencies[0].State; st != driver.StateReady {
		t.Errorf("after Refresh lz is %s, want ready", st)
	}
	if pids := procsWithArg("--name=" + name); len(pids) != 1 {
		t.Errorf("lazy server processes after Refresh: %v, want one", pids)
	}
}

// TestSSEIdleBound: under SSE, a server that declares headers_ref has its
// idle event stream cut at timeout_ms — the session ends and the
// supervisor reconnects — while one that declares neither keeps its
// stream through the same silence.
func TestSSEIdleBound(t *testing.T) {
	t.Setenv("HEDDLE_TEST_SSE_KEY", "X-Api-Key=k")
	srv := startHTTPServer(t, 0)
	for _, tc := range []struct {
		name, extra string
		cut         bool
	}{
		{"headers_ref", `, headers_ref: "${env:HEDDLE_TEST_SSE_KEY}"`, true},
		{"neither", ``, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := newLogCapture()
			rt := openWith(t, fmt.Sprintf(`
ai:
  mcp_servers:
    s: {transport: sse, url: "%s/sse", timeout_ms: 300%s}
`, srv.URL(), tc.extra), map[string]string{"x": `capabilities: [{kind: mcp, server: s}]`}, runtime.Options{Logger: slog.New(logs)})
			lost := logs.Await(func(r logRecord) bool { return r.Msg == "server connection lost" })
			select {
			case <-lost:
				if !tc.cut {
					t.Fatal("the stream was cut with neither headers_ref nor auth")
				}
			case <-time.After(1500 * time.Millisecond):
				if tc.cut {
					t.Fatal("the idle stream was not cut within 1.5s of a 300ms timeout_ms")
				}
			}
			// Either way, calls work: the supervisor reconnected.
			eventually(t, 10*time.Second, "server ready", func() bool { return len(rt.Unavailable()) == 0 })
			mustCall(t, toolsetOf(t, rt, "x"), "echo", map[string]any{"text": "hi"})
		})
	}
}

// TestHandleToolTimeout: a call through rt.MCP is under the supervisor's
// deadline as an agent's is, and fails TOOL_TIMEOUT when it passes before
// the server's timeout_ms.
func TestHandleToolTimeout(t *testing.T) {
	rt := openWith(t, `
ai:
  mcp_servers:
    s: {transport: stdio, command: $TESTMCP, timeout_ms: 5000}
`, map[string]string{"x": `capabilities: []`}, runtime.Options{Kinds: testkinds.Uses(mcplive.Use{Server: "s", ToolTimeout: 200 * time.Millisecond})})
	h, err := mcplive.NewHandle(rt, "s")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = h.Call(context.Background(), "sleep", map[string]any{"ms": 3000})
	if !diag.Has(err, diag.ToolTimeout) {
		t.Fatalf("err = %v, want TOOL_TIMEOUT", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("TOOL_TIMEOUT after %v, want about 200ms", d)
	}
	if res, err := h.Call(context.Background(), "echo", map[string]any{"text": "x"}); err != nil || res.IsError {
		t.Errorf("a quick call after: %v", err)
	}
}

// closeKind is a kind whose Open takes delay, and whose instance records
// its Close in order.
type closeKind struct {
	delay time.Duration
	order *[]string
	name  string
}

func (k closeKind) Open(ctx context.Context, _ driver.Env) (driver.Instance, []*driver.Failure, error) {
	time.Sleep(k.delay)
	return closeInstance(k), nil, nil
}

type closeInstance closeKind

func (c closeInstance) Source(*plan.Agent, plan.Grant) (driver.Source, error) {
	return emptySource(c.name), nil
}
func (c closeInstance) Status() []driver.Dependency { return nil }
func (c closeInstance) Close() error                { *c.order = append(*c.order, c.name); return nil }

type emptySource string

func (s emptySource) Name() string { return string(s) }
func (s emptySource) Tools(context.Context) ([]*mcp.Tool, uint64, error) {
	return nil, 1, nil
}
func (s emptySource) Call(context.Context, *mcp.Tool, map[string]any, driver.CallOptions) (*mcp.CallToolResult, error) {
	return nil, diag.New(diag.ToolUnknown, "no tools")
}

// TestCloseOrder: Close releases the kinds in the reverse order of their
// opening: the last to finish opening closes first.
func TestCloseOrder(t *testing.T) {
	var order []string
	kinds := runtime.NewKindSet(map[string]driver.Kind{
		"a": closeKind{order: &order, name: "a"},
		"b": closeKind{delay: 100 * time.Millisecond, order: &order, name: "b"},
		"c": closeKind{delay: 50 * time.Millisecond, order: &order, name: "c"},
	})
	p := &plan.Plan{Startup: plan.Startup{TimeoutMS: 5000}, Agents: map[string]*plan.Agent{
		"x": {Name: "x", Grants: []plan.Grant{{Kind: "a"}, {Kind: "b"}, {Kind: "c"}}, Policies: plan.Policies{ToolTimeoutMS: 1000}},
	}}
	rt, err := runtime.Open(context.Background(), p, runtime.Options{Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	_ = rt.Close()
	if got := strings.Join(order, ","); got != "b,c,a" {
		t.Errorf("closed %s, want b,c,a (opened a, c, b)", got)
	}
}
