package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// hangServer is the test server with hang, a tool whose calls block until
// they are cancelled: calls in flight stay in flight, so that a bound on
// calls at once is observable.
var hangServer = &testmcp.Options{Tools: []string{"hang"}, HangOnCall: []string{"hang"}}

// outcome is what one of many concurrent calls came back with.
type outcome struct {
	caller string
	res    *mcp.CallToolResult
	err    error
}

// burst starts one call of tool per caller, all at once, each on a context
// of its own, and returns the outcomes that are in once every call has
// either returned or blocked; cancel ends the calls still in flight and
// returns the rest of the outcomes.
func burst(t *testing.T, calls []func(context.Context) (string, *mcp.CallToolResult, error)) (done []outcome, cancel func() []outcome) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	out := make(chan outcome, len(calls))
	var wg sync.WaitGroup
	for _, call := range calls {
		wg.Go(func() {
			who, res, err := call(ctx)
			out <- outcome{who, res, err}
		})
	}
	synctest.Wait()
	drain := func() []outcome {
		var got []outcome
		for {
			select {
			case o := <-out:
				got = append(got, o)
			default:
				return got
			}
		}
	}
	done = drain()
	return done, func() []outcome {
		stop()
		wg.Wait()
		return drain()
	}
}

// callsAs makes n calls of tool through ts, by callers named prefix0, prefix1, …
func callsAs(ts *runtime.Toolset, prefix string, n int, tool string) []func(context.Context) (string, *mcp.CallToolResult, error) {
	var calls []func(context.Context) (string, *mcp.CallToolResult, error)
	for i := range n {
		who := fmt.Sprintf("%s%d", prefix, i)
		calls = append(calls, func(ctx context.Context) (string, *mcp.CallToolResult, error) {
			res, err := ts.Call(heddle.WithCaller(ctx, heddle.Identity{Subject: who}), tool, map[string]any{"text": "hi"})
			return who, res, err
		})
	}
	return calls
}

// sortOut splits outcomes into admitted results (the tool answered) and
// TOOL_RATE_LIMITED refusals, failing on anything else; it checks that
// every refusal names limit and carries a positive retry-after of at most
// maxRetry.
func sortOut(t *testing.T, outs []outcome, limit string, maxRetry time.Duration) (admitted int, limited []time.Duration) {
	t.Helper()
	for _, o := range outs {
		switch {
		case o.err != nil:
			t.Errorf("%s: error %v", o.caller, o.err)
		case runtime.RefusalCode(o.res) == diag.ToolRateLimited:
			got, after, ok := runtime.LimitOf(o.res)
			if !ok || got != limit || after <= 0 || after > maxRetry {
				t.Errorf("%s: refused by %q after %v (ok %v), want %s within (0, %v]", o.caller, got, after, ok, limit, maxRetry)
			}
			limited = append(limited, after)
		case o.res.IsError:
			t.Errorf("%s: code %q: %s", o.caller, runtime.RefusalCode(o.res), text(o.res))
		default:
			admitted++
		}
	}
	return admitted, limited
}

// TestRateLimit: 50 callers at once against {calls: 10, per: 1m} for the
// agent: 10 are admitted, 40 refused with TOOL_RATE_LIMITED and the wait
// until the next token (6 s, the interval over the calls); 6 s later one
// more call is admitted, and only one. Each refusal is reported to OnCall
// with the limit that refused it.
func TestRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		events := map[string]int{}
		rt := openWith(t, `
ai:
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP}
`, map[string]string{"x": `
capabilities: [{kind: mcp, server: a}]
policies:
  limits:
    - {calls: 10, per: 1m}
`}, runtime.Options{Kinds: testkinds.InMemory(t, nil), OnCall: func(ev runtime.CallEvent) {
			mu.Lock()
			defer mu.Unlock()
			events[string(ev.Code)+" "+ev.Limit]++
		}})
		ts := toolsetOf(t, rt, "x")
		done, rest := burst(t, callsAs(ts, "caller", 50, "echo"))
		done = append(done, rest()...)
		admitted, limited := sortOut(t, done, "policies.limits[0]", 6*time.Second)
		if admitted != 10 || len(limited) != 40 {
			t.Fatalf("admitted %d, refused %d of 50, want 10 and 40", admitted, len(limited))
		}
		for _, after := range limited {
			if after != 6*time.Second {
				t.Errorf("retry after %v, want 6s: no time passed, and one token comes every 6 s", after)
			}
		}
		mu.Lock()
		if got := events["TOOL_RATE_LIMITED policies.limits[0]"]; got != 40 {
			t.Errorf("OnCall saw %d refusals by policies.limits[0], want 40 (events %v)", got, events)
		}
		mu.Unlock()

		time.Sleep(6 * time.Second)
		mustCall(t, ts, "echo", map[string]any{"text": "refilled"})
		res := wantRefusal(t, ts, "echo", map[string]any{"text": "again"}, diag.ToolRateLimited)
		if _, after, _ := runtime.LimitOf(res); after != 6*time.Second {
			t.Errorf("retry after %v, want 6s", after)
		}
	})
}

// TestRateLimitByCaller: {calls: 3, per: 1m, by: caller} gives each caller
// its own budget; anonymous callers share one.
func TestRateLimitByCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := openWith(t, `
ai:
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP}
`, map[string]string{"x": `
capabilities: [{kind: mcp, server: a}]
policies:
  limits:
    - {calls: 3, per: 1m, by: caller}
`}, runtime.Options{Kinds: testkinds.InMemory(t, nil)})
		ts := toolsetOf(t, rt, "x")
		var calls []func(context.Context) (string, *mcp.CallToolResult, error)
		for range 10 {
			calls = append(calls, callsAs(ts, "alice", 1, "echo")...)
			calls = append(calls, callsAs(ts, "bob", 1, "echo")...)
			calls = append(calls, func(ctx context.Context) (string, *mcp.CallToolResult, error) {
				res, err := ts.Call(ctx, "echo", map[string]any{"text": "hi"})
				return "", res, err
			})
		}
		done, rest := burst(t, calls)
		done = append(done, rest()...)
		per := map[string]int{}
		for _, o := range done {
			if admitted, _ := sortOut(t, []outcome{o}, "policies.limits[0]", 20*time.Second); admitted == 1 {
				per[o.caller]++
			}
		}
		if per["alice0"] != 3 || per["bob0"] != 3 || per[""] != 3 {
			t.Errorf("admitted per caller %v, want 3 each for alice0, bob0 and the anonymous callers", per)
		}
	})
}

// TestConcurrentLimit: 50 callers at once against {concurrent: 5}, with a
// tool that blocks until its call is cancelled: 5 are in flight, 45 refused
// at once with TOOL_RATE_LIMITED; when the 5 end, calls are admitted again.
func TestConcurrentLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := openWith(t, `
ai:
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP}
`, map[string]string{"x": `
capabilities: [{kind: mcp, server: a}]
policies:
  limits:
    - {concurrent: 5}
`}, runtime.Options{Kinds: testkinds.InMemory(t, hangServer)})
		ts := toolsetOf(t, rt, "x")
		done, cancel := burst(t, callsAs(ts, "caller", 50, "hang"))
		admitted, limited := sortOut(t, done, "policies.limits[0]", driver.ConcurrentRetryAfter)
		if admitted != 0 || len(limited) != 45 {
			t.Fatalf("with the calls in flight: %d answered, %d refused, want 0 and 45", admitted, len(limited))
		}
		for _, o := range cancel() {
			if !errors.Is(o.err, context.Canceled) {
				t.Errorf("%s: a call in flight ended with %v %v, want its cancellation", o.caller, o.res, o.err)
			}
		}
		mustCall(t, ts, "echo", map[string]any{"text": "the places are free again"})
	})
}

// TestMaxConcurrentAcrossAgents: a server's max_concurrent bounds the calls
// in flight to it over every agent of the worker. Two agents, each with 25
// callers at once, share max_concurrent: 4: four calls are in flight, 46
// refused with TOOL_RATE_LIMITED naming the server's setting; when the four
// end, either agent's calls go through again.
func TestMaxConcurrentAcrossAgents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := openWith(t, `
ai:
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, max_concurrent: 4}
`, map[string]string{
			"p": `capabilities: [{kind: mcp, server: a}]`,
			"q": `capabilities: [{kind: mcp, server: a}]`,
		}, runtime.Options{Kinds: testkinds.InMemory(t, hangServer)})
		p, q := toolsetOf(t, rt, "p"), toolsetOf(t, rt, "q")
		calls := append(callsAs(p, "p", 25, "hang"), callsAs(q, "q", 25, "hang")...)
		done, cancel := burst(t, calls)
		admitted, limited := sortOut(t, done, "ai.mcp_servers.a.max_concurrent", driver.ConcurrentRetryAfter)
		if admitted != 0 || len(limited) != 46 {
			t.Fatalf("with the calls in flight: %d answered, %d refused, want 0 and 46", admitted, len(limited))
		}
		// Application code's handle on the server shares the bound.
		h, err := mcplive.NewHandle(rt, "a")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Call(context.Background(), "echo", map[string]any{"text": "hi"}); !diag.Has(err, diag.ToolRateLimited) {
			t.Errorf("a handle's call while the server is full: %v, want TOOL_RATE_LIMITED", err)
		}
		byAgent := map[byte]int{}
		for _, o := range cancel() {
			if !errors.Is(o.err, context.Canceled) {
				t.Errorf("%s: a call in flight ended with %v %v, want its cancellation", o.caller, o.res, o.err)
			}
			byAgent[o.caller[0]]++
		}
		t.Logf("calls in flight by agent: p %d, q %d", byAgent['p'], byAgent['q'])
		mustCall(t, p, "echo", map[string]any{"text": "free again"})
		mustCall(t, q, "echo", map[string]any{"text": "free again"})
		if res, err := h.Call(context.Background(), "echo", map[string]any{"text": "free again"}); err != nil || res.IsError {
			t.Errorf("a handle's call once the server is free: %v %v", res, err)
		}
	})
}

// TestLimitCountsOnlyCallsSent: a call that is refused before it would be
// sent — an unknown tool, a denied one, arguments that do not match — uses
// none of the agent's budget; a tools glob scopes an entry to its tools.
func TestLimitCountsOnlyCallsSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := openWith(t, `
ai:
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP}
`, map[string]string{"x": `
capabilities: [{kind: mcp, server: a}]
policies:
  denied_tools: [fail]
  limits:
    - {calls: 1, per: 1h, tools: ["ech*"]}
`}, runtime.Options{Kinds: testkinds.InMemory(t, nil)})
		ts := toolsetOf(t, rt, "x")
		wantRefusal(t, ts, "nope", nil, diag.ToolUnknown)
		wantRefusal(t, ts, "fail", nil, diag.ToolDenied)
		wantRefusal(t, ts, "echo", map[string]any{"text": 42}, diag.ToolArgsInvalid)
		mustCall(t, ts, "echo", map[string]any{"text": "the one call"})
		wantRefusal(t, ts, "echo", map[string]any{"text": "a second"}, diag.ToolRateLimited)
		mustCall(t, ts, "add", map[string]any{"a": 1, "b": 2}) // not matched by the entry's tools
		mustCall(t, ts, "add", map[string]any{"a": 1, "b": 2})
	})
}

// TestMaxConcurrentStdio: the same bound over a real child process: of 50
// callers of two agents at once, max_concurrent: 3 are in flight at the
// server and 47 are refused at once; once those end, calls go through.
func TestMaxConcurrentStdio(t *testing.T) {
	t.Parallel()
	rt := openWith(t, `
ai:
  startup_timeout_ms: 10000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, max_concurrent: 3, args: [--tools, hang, --hang-on-call, hang]}
`, map[string]string{
		"p": `capabilities: [{kind: mcp, server: a}]`,
		"q": `capabilities: [{kind: mcp, server: a}]`,
	}, runtime.Options{})
	p, q := toolsetOf(t, rt, "p"), toolsetOf(t, rt, "q")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan outcome, 50)
	var wg sync.WaitGroup
	for _, call := range append(callsAs(p, "p", 25, "hang"), callsAs(q, "q", 25, "hang")...) {
		wg.Go(func() {
			who, res, err := call(ctx)
			out <- outcome{who, res, err}
		})
	}
	var refused []outcome
	for len(refused) < 47 {
		select {
		case o := <-out:
			refused = append(refused, o)
		case <-time.After(20 * time.Second):
			t.Fatalf("%d calls came back in 20 s, want 47 refusals", len(refused))
		}
	}
	if admitted, limited := sortOut(t, refused, "ai.mcp_servers.a.max_concurrent", driver.ConcurrentRetryAfter); admitted != 0 || len(limited) != 47 {
		t.Fatalf("%d answered, %d refused, want 0 and 47", admitted, len(limited))
	}
	select {
	case o := <-out:
		t.Fatalf("a 48th call came back while three hang: %v %v", o.res, o.err)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	wg.Wait()
	close(out)
	for o := range out {
		if !errors.Is(o.err, context.Canceled) {
			t.Errorf("%s: a call in flight ended with %v %v, want its cancellation", o.caller, o.res, o.err)
		}
	}
	mustCall(t, p, "echo", map[string]any{"text": "free again"})
}
