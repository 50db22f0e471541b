package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/health"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// siblings grants a healthy server, good, and one that fails, bad, to one
// agent.
var siblings = map[string]string{"x": `
capabilities:
  - {kind: mcp, server: good}
  - {kind: mcp, server: bad}
`}

// coded calls a tool and fails the test unless the outcome is a result:
// a success, the tool's own error, or a refusal with a code. It returns
// the refusal's code ("" for anything else).
func coded(t *testing.T, ts *runtime.Toolset, name string) diag.Code {
	t.Helper()
	res, err := ts.Call(context.Background(), name, map[string]any{"text": "hi"})
	if err != nil {
		t.Fatalf("%s: error %v (code %q), want a result", name, err, diag.CodeOf(err))
	}
	return runtime.RefusalCode(res)
}

// dependency returns a dependency of the health report.
func dependency(t *testing.T, rt *runtime.Runtime, name string) driver.Dependency {
	t.Helper()
	for _, d := range rt.Health().Dependencies {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no dependency %s in the health report", name)
	return driver.Dependency{}
}

// wantIsolated checks an agent's view while bad is down with code and good
// is fine: good's tools are listed and answer, bad's are left out and
// refused with TOOL_UNAVAILABLE, the toolset and the runtime name bad as
// unavailable, and the report is ready unless bad is required.
func wantIsolated(t *testing.T, rt *runtime.Runtime, ts *runtime.Toolset, code diag.Code, required bool, goodTool, badTool string) {
	t.Helper()
	if got, want := ts.Unavailable(), map[string]diag.Code{"bad": code}; !maps.Equal(got, want) {
		t.Errorf("Toolset.Unavailable() = %v, want %v", got, want)
	}
	if got, want := rt.Unavailable(), map[string]diag.Code{"bad": code}; !maps.Equal(got, want) {
		t.Errorf("Runtime.Unavailable() = %v, want %v", got, want)
	}
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatalf("Tools while bad is down: %v", err)
	}
	if !slices.ContainsFunc(tools, func(tl runtime.Tool) bool { return tl.Name == goodTool }) {
		t.Errorf("Tools lacks %s", goodTool)
	}
	if i := slices.IndexFunc(tools, func(tl runtime.Tool) bool { return tl.Server == "bad" }); i >= 0 {
		t.Errorf("Tools lists %s of the server that is down", tools[i].Name)
	}
	if text(mustCall(t, ts, goodTool, map[string]any{"text": "still"})) != "still" {
		t.Errorf("%s did not echo", goodTool)
	}
	wantRefusal(t, ts, badTool, map[string]any{"text": "hi"}, diag.ToolUnavailable)
	d := dependency(t, rt, "bad")
	if d.State != driver.StateDown || d.Code != code || d.Since == nil {
		t.Errorf("bad in the report: state %s, code %s, since %v; want down, %s, a time", d.State, d.Code, d.Since, code)
	}
	if rep := rt.Health(); rep.Ready == required {
		t.Errorf("Ready = %v with bad down and required = %v", rep.Ready, required)
	}
}

// TestListFailsAtStartup: a server that connects but cannot list its
// tools is MCP_LIST_FAILED. Required, start-up fails naming it alone;
// optional, start-up goes on: the health report shows it down with that
// code, the agent's other server serves its tools, and the failing
// server's tools are left out and refused with a code.
func TestListFailsAtStartup(t *testing.T) {
	t.Parallel()
	for _, required := range []bool{true, false} {
		t.Run(fmt.Sprintf("required=%v", required), func(t *testing.T) {
			t.Parallel()
			p := compilePlan(t, fmt.Sprintf(`
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    good: {transport: stdio, command: $TESTMCP}
    bad:
      transport: stdio
      command: $TESTMCP
      args: [--no-fixed-tools, --tools, "lookup,fetch", --fail-list]
      required: %v
`, required), siblings)
			logs := newLogCapture()
			rt, err := runtime.Open(context.Background(), p, runtime.Options{Logger: slog.New(logs)})
			if required {
				if err == nil {
					rt.Close()
					t.Fatal("Open succeeded with a required server that cannot list its tools")
				}
				var se *runtime.StartupError
				if !errors.As(err, &se) || len(se.Failures) != 1 || se.Failures[0].Name != "bad" || !diag.Has(se.Failures[0].Err, diag.MCPListFailed) {
					t.Fatalf("Open: %v, want one failure: bad, MCP_LIST_FAILED", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { _ = rt.Close() })
			warned := slices.ContainsFunc(logs.Records(), func(r logRecord) bool {
				return r.Attrs["server"] == "bad" && r.Attrs["code"] == string(diag.MCPListFailed)
			})
			if !warned {
				t.Error("no log record names bad with MCP_LIST_FAILED")
			}
			ts := toolsetOf(t, rt, "x")
			wantIsolated(t, rt, ts, diag.MCPListFailed, false, "echo", "bad__lookup")
			wantRefusal(t, ts, "bad.fetch", nil, diag.ToolUnavailable)
		})
	}
}

// TestListFailsAfterListChanged: a server lists its tools at start-up and
// fails to list them again after its list_changed. It is down with
// MCP_LIST_FAILED, required or not — the report is not ready when it is
// required — while the other server of the same agent goes on answering
// every call, under the same names.
func TestListFailsAfterListChanged(t *testing.T) {
	t.Parallel()
	for _, required := range []bool{true, false} {
		t.Run(fmt.Sprintf("required=%v", required), func(t *testing.T) {
			t.Parallel()
			rt := openWith(t, fmt.Sprintf(`
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    good: {transport: stdio, command: $TESTMCP}
    bad: {transport: stdio, command: $TESTMCP, args: [--fail-list-after, "1"], required: %v}
`, required), siblings, runtime.Options{})
			ts := toolsetOf(t, rt, "x")
			mustCall(t, ts, "good__echo", map[string]any{"text": "before"})
			mustCall(t, ts, "bad__add_tool", map[string]any{"name": "later"}) // list_changed follows

			eventually(t, 10*time.Second, "bad down", func() bool {
				if code := coded(t, ts, "good__echo"); code != "" {
					t.Fatalf("good__echo refused with %s while bad fails its listing", code)
				}
				return rt.Unavailable()["bad"] == diag.MCPListFailed
			})
			wantIsolated(t, rt, ts, diag.MCPListFailed, required, "good__echo", "bad__echo")
			// The supervisor keeps listing it again; each call it refuses
			// meanwhile carries a code.
			for range 5 {
				if code := coded(t, ts, "bad__echo"); code != diag.ToolUnavailable {
					t.Fatalf("bad__echo: code %q, want %s", code, diag.ToolUnavailable)
				}
				mustCall(t, ts, "good__echo", map[string]any{"text": "during"})
			}
		})
	}
}

// TestListFailsAfterReconnect: an HTTP server restarts and, once back,
// cannot list its tools: the reconnect finds it, and it is down with
// MCP_LIST_FAILED while the agent's other server answers every call. When
// it restarts healthy, the first call to it succeeds.
func TestListFailsAfterReconnect(t *testing.T) {
	t.Parallel()
	for _, required := range []bool{true, false} {
		t.Run(fmt.Sprintf("required=%v", required), func(t *testing.T) {
			t.Parallel()
			srv := startHTTPServer(t, 0)
			rt := openWith(t, fmt.Sprintf(`
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    good: {transport: stdio, command: $TESTMCP}
    bad: {transport: http, url: "%s/mcp", timeout_ms: 5000, required: %v}
`, srv.URL(), required), siblings, runtime.Options{})
			ts := toolsetOf(t, rt, "x")
			mustCall(t, ts, "bad__echo", map[string]any{"text": "before"})

			srv.restartWith("--fail-list")
			// The old session is gone (404): the call reconnects, and the
			// new session cannot list.
			if code := coded(t, ts, "bad__echo"); code != diag.ToolUnavailable {
				t.Fatalf("bad__echo after the restart: code %q, want %s", code, diag.ToolUnavailable)
			}
			wantIsolated(t, rt, ts, diag.MCPListFailed, required, "good__echo", "bad__echo")

			srv.restartWith()
			start := time.Now()
			mustCall(t, ts, "bad__echo", map[string]any{"text": "back"})
			t.Logf("first call once the server lists again: %v", time.Since(start))
			if !rt.Health().Ready || len(ts.Unavailable()) != 0 {
				t.Errorf("after the server came back: ready %v, unavailable %v", rt.Health().Ready, ts.Unavailable())
			}
			if !slices.Contains(toolNames(t, ts), "bad__echo") {
				t.Error("bad__echo is not listed again")
			}
		})
	}
}

// TestLateServerCannotList: an optional server that was down at start-up
// comes up but cannot list its tools: it is down with MCP_LIST_FAILED (not
// ready with no tools, which once failed every call of the agent), and the
// other server is untouched. Once it lists, its tools appear.
func TestLateServerCannotList(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	rt := openWith(t, fmt.Sprintf(`
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    good: {transport: stdio, command: $TESTMCP}
    bad: {transport: http, url: "http://127.0.0.1:%d/mcp", timeout_ms: 5000, required: false}
`, port), siblings, runtime.Options{})
	ts := toolsetOf(t, rt, "x")
	wantIsolated(t, rt, ts, diag.MCPServerUnreachable, false, "echo", "bad__echo")

	srv := startHTTPServer(t, port, "--no-fixed-tools", "--tools=lookup", "--fail-list")
	eventually(t, 10*time.Second, "bad cannot list", func() bool {
		if code := coded(t, ts, "echo"); code != "" {
			t.Fatalf("echo refused with %s", code)
		}
		return rt.Unavailable()["bad"] == diag.MCPListFailed
	})
	wantIsolated(t, rt, ts, diag.MCPListFailed, false, "echo", "bad__lookup")

	srv.restartWith("--no-fixed-tools", "--tools=lookup")
	mustCall(t, ts, "bad__lookup", map[string]any{"q": "x"})
	if names := toolNames(t, ts); !slices.Contains(names, "lookup") || !slices.Contains(names, "echo") {
		t.Errorf("tools = %v, want echo and lookup", names)
	}
}

// flakyDial is a mcplive.Kind.Dial whose server can be taken away and
// brought back, and made to fail its listings, in a synctest bubble: each
// connection attempt gets a new in-process test server over an in-memory
// transport, or fails to connect while the server is away.
type flakyDial struct {
	t        *testing.T
	away     atomic.Bool // connection attempts fail
	failList atomic.Bool // tools/list answers a JSON-RPC error
	dials    atomic.Int32
	lists    atomic.Int32

	mu       sync.Mutex
	sessions []*mcp.ServerSession
}

func newFlakyDial(t *testing.T) *flakyDial {
	d := &flakyDial{t: t}
	t.Cleanup(d.drop)
	return d
}

func (d *flakyDial) dial(string) mcp.Transport {
	d.dials.Add(1)
	if d.away.Load() {
		return refusingTransport{}
	}
	srv := testmcp.NewServer(nil)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				d.lists.Add(1)
				if d.failList.Load() {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "listing failed"}
				}
			}
			return next(ctx, method, req)
		}
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		d.t.Errorf("in-memory server: %v", err)
		return ct
	}
	d.mu.Lock()
	d.sessions = append(d.sessions, ss)
	d.mu.Unlock()
	return ct
}

// drop ends every session the servers have: the client sees its
// connection end.
func (d *flakyDial) drop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ss := range d.sessions {
		_ = ss.Close()
	}
	d.sessions = nil
}

// refusingTransport is a server that is not there.
type refusingTransport struct{}

func (refusingTransport) Connect(context.Context) (mcp.Connection, error) {
	return nil, errors.New("connection refused")
}

// TestRecheckOnDemand: a server whose connection ends is down at once —
// the report is not ready at that instant. While it stays away, attempts
// are paced by the supervisor's backoff (up to 30 s apart). When it is
// back, the first call succeeds at once, with the supervisor deep in its
// backoff: the call re-checks the server rather than wait for the next
// attempt.
func TestRecheckOnDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFlakyDial(t)
		rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    bad: {transport: stdio, command: $TESTMCP}
`, map[string]string{"x": `capabilities: [{kind: mcp, server: bad}]`}, runtime.Options{Kinds: testkinds.MCP(func(k *mcplive.Kind) { k.Dial = d.dial })})
		ts := toolsetOf(t, rt, "x")
		mustCall(t, ts, "echo", map[string]any{"text": "before"})

		d.away.Store(true)
		d.drop()
		synctest.Wait()
		if rt.Health().Ready {
			t.Fatal("ready at once after the server's connection ended")
		}
		before := d.dials.Load()
		time.Sleep(10 * time.Minute)
		n := d.dials.Load() - before
		if n < 5 || n > 40 {
			t.Errorf("%d connection attempts in 10 minutes away, want the backoff's pace", n)
		}
		t.Logf("connection attempts in 10 minutes away: %d", n)
		if names := toolNames(t, ts); len(names) != 0 {
			t.Errorf("Tools while the server is away = %v, want none", names)
		}

		time.Sleep(time.Second)
		d.away.Store(false)
		start := time.Now()
		mustCall(t, ts, "echo", map[string]any{"text": "back"})
		if waited := time.Since(start); waited > driver.DefaultBackoffFirst {
			t.Errorf("the first call once the server was back waited %v", waited)
		}
		if !rt.Health().Ready {
			t.Error("not ready once the call reconnected the server")
		}
	})
}

// TestListFailurePaced: a server that fails its listings after a
// list_changed is down with MCP_LIST_FAILED and listed again at the
// supervisor's pace, not by every call; when its listing works again, the
// first call succeeds at once.
func TestListFailurePaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFlakyDial(t)
		rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    bad: {transport: stdio, command: $TESTMCP}
`, map[string]string{"x": `capabilities: [{kind: mcp, server: bad}]`}, runtime.Options{Kinds: testkinds.MCP(func(k *mcplive.Kind) { k.Dial = d.dial })})
		ts := toolsetOf(t, rt, "x")
		d.failList.Store(true)
		mustCall(t, ts, "add_tool", map[string]any{"name": "later"})
		time.Sleep(time.Second) // list_changed has arrived (go-sdk sends it after a short delay)
		wantRefusal(t, ts, "echo", map[string]any{"text": "x"}, diag.ToolUnavailable)
		if got := rt.Unavailable()["bad"]; got != diag.MCPListFailed {
			t.Fatalf("bad is %q, want down with %s", got, diag.MCPListFailed)
		}
		before := d.lists.Load()
		time.Sleep(10 * time.Minute)
		n := d.lists.Load() - before
		if n < 5 || n > 40 {
			t.Errorf("%d listings in 10 minutes, want the backoff's pace", n)
		}
		t.Logf("listings in 10 minutes: %d", n)
		if n := d.dials.Load(); n != 1 {
			t.Errorf("%d sessions: a server that cannot list keeps its session", n)
		}

		d.failList.Store(false)
		start := time.Now()
		mustCall(t, ts, "echo", map[string]any{"text": "back"})
		if waited := time.Since(start); waited > driver.DefaultBackoffFirst {
			t.Errorf("the first call once the listing worked waited %v", waited)
		}
		if names := toolNames(t, ts); !slices.Contains(names, "later") {
			t.Errorf("tools = %v, want the one added", names)
		}
	})
}

// TestReadyzRechecks: with a required server away long enough for its
// supervisor's backoff to reach its cap, and no call to find out, /readyz
// re-checks it: the first probe once it is back answers 200.
func TestReadyzRechecks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFlakyDial(t)
		rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    bad: {transport: stdio, command: $TESTMCP}
`, map[string]string{"x": `capabilities: [{kind: mcp, server: bad}]`}, runtime.Options{Kinds: testkinds.MCP(func(k *mcplive.Kind) { k.Dial = d.dial })})
		mux := http.NewServeMux()
		health.Register(mux, rt)
		probe := func() int {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
			return rec.Code
		}
		d.away.Store(true)
		d.drop()
		time.Sleep(10 * time.Minute)
		if code := probe(); code != http.StatusServiceUnavailable {
			t.Fatalf("/readyz while the server is away: %d", code)
		}
		time.Sleep(time.Second)
		d.away.Store(false)
		start := time.Now()
		if code := probe(); code != http.StatusOK {
			t.Fatalf("/readyz once the server is back: %d, want 200", code)
		}
		if waited := time.Since(start); waited > driver.DefaultBackoffFirst {
			t.Errorf("the probe waited %v", waited)
		}
	})
}
