package runtime_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/config/setting"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/internal/testredis"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/secrets"
	"github.com/heddlehq/heddle/statestore"
)

// These tests run workers — runtimes, each with a store of its own, as
// each heddle serve has — against one real redis-server (serve.state kind
// redis), and check that the fleet's rates of policies.limits are counted
// as one worker counts them.

const ratesAPI = `
ai:
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP}
`

// worker opens a runtime with agent x, whose policies are limits, its
// rates counted in the Redis at url (serve.state on_error onError,
// timeout_ms 300). fallbacks, when not nil, counts the calls its own
// counts admitted instead.
func worker(t testing.TB, url, onError, limits string, fallbacks *atomic.Int64) (*runtime.Toolset, *statestore.Store) {
	t.Helper()
	t.Setenv("HEDDLE_TEST_REDIS_URL", url)
	ref := setting.Ref{Scheme: "env", Name: "HEDDLE_TEST_REDIS_URL"}
	st, err := statestore.Open(context.Background(), plan.ServeState{Kind: setting.StateRedis, URLRef: &ref, Prefix: "heddle:", OnError: onError, TimeoutMS: 300},
		secrets.New(secrets.Options{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	opts := runtime.Options{Kinds: testkinds.InMemory(t, nil), Rates: st.Rates()}
	if fallbacks != nil {
		opts.OnRateFallback = func(agent string) {
			if agent != "x" {
				t.Errorf("a fallback of agent %q, want x", agent)
			}
			fallbacks.Add(1)
		}
	}
	return agentX(t, limits, opts), st
}

// agentX opens a runtime with agent x, whose policies are limits, and
// returns x's toolset; the runtime is closed when the test ends.
func agentX(t testing.TB, limits string, opts runtime.Options) *runtime.Toolset {
	t.Helper()
	rt, err := runtime.Open(context.Background(), compilePlan(t, ratesAPI, map[string]string{"x": "capabilities: [{kind: mcp, server: a}]\npolicies:\n  limits:\n" + limits}), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ts, err := rt.Toolset("x")
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// callAs calls echo through ts as who.
func callAs(ts *runtime.Toolset, who string) (*mcp.CallToolResult, error) {
	return ts.Call(heddle.WithCaller(context.Background(), heddle.Identity{Subject: who}), "echo", map[string]any{"text": "hi"})
}

// TestRatesFleetWide: two workers sharing one Redis, 15 calls by alice
// from each at once, against {calls: 10, per: 1m, by: caller}: 10 are
// admitted in all, 20 refused by policies.limits[0] with the wait until
// her next token; bob, on either worker, has a budget of his own.
func TestRatesFleetWide(t *testing.T) {
	srv := testredis.Start(t)
	a, _ := worker(t, srv.URL(), "closed", "    - {calls: 10, per: 1m, by: caller}\n", nil)
	b, _ := worker(t, srv.URL(), "closed", "    - {calls: 10, per: 1m, by: caller}\n", nil)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		outs []outcome
	)
	for i := range 30 {
		ts := a
		if i%2 == 1 {
			ts = b
		}
		wg.Go(func() {
			res, err := callAs(ts, "alice")
			mu.Lock()
			outs = append(outs, outcome{"alice", res, err})
			mu.Unlock()
		})
	}
	wg.Wait()
	admitted, limited := sortOut(t, outs, "policies.limits[0]", 6*time.Second)
	if admitted != 10 || len(limited) != 20 {
		t.Fatalf("two workers admitted %d of alice's 30 calls and refused %d, want 10 and 20", admitted, len(limited))
	}
	for _, ts := range []*runtime.Toolset{a, b} {
		if res, err := callAs(ts, "bob"); err != nil || res.IsError {
			t.Errorf("bob refused: %v %v", runtime.RefusalCode(res), err)
		}
	}
}

// TestRatesFleetRefusalTakesNothing: a call the caller's entry refuses is
// not counted against the agent's: alice's 10 calls, of which 2 are
// admitted, take 2 of the agent's 100, and 98 other callers fit.
func TestRatesFleetRefusalTakesNothing(t *testing.T) {
	srv := testredis.Start(t)
	limits := "    - {calls: 100, per: 1m}\n    - {calls: 2, per: 1m, by: caller}\n"
	ws := []*runtime.Toolset{}
	for range 2 {
		ts, _ := worker(t, srv.URL(), "closed", limits, nil)
		ws = append(ws, ts)
	}
	n := 0
	for i := range 10 {
		if res, err := callAs(ws[i%2], "alice"); err == nil && !res.IsError {
			n++
		} else if code := runtime.RefusalCode(res); code != diag.ToolRateLimited {
			t.Fatalf("alice's call %d: %v %v", i, code, err)
		}
	}
	if n != 2 {
		t.Fatalf("alice: %d admitted, want 2", n)
	}
	n = 0
	for i := range 110 {
		if res, err := callAs(ws[i%2], fmt.Sprint("caller", i)); err == nil && !res.IsError {
			n++
		}
	}
	if n != 98 {
		t.Errorf("after alice's refusals the agent admitted %d more, want 98", n)
	}
}

// TestRatesFleetRetryAfter: {calls: 2, per: 200ms}: the third call is
// refused with the wait until the next token, and a call after that wait
// is admitted, on the other worker.
func TestRatesFleetRetryAfter(t *testing.T) {
	srv := testredis.Start(t)
	a, _ := worker(t, srv.URL(), "closed", "    - {calls: 2, per: 200ms}\n", nil)
	b, _ := worker(t, srv.URL(), "closed", "    - {calls: 2, per: 200ms}\n", nil)
	mustCall(t, a, "echo", map[string]any{"text": "1"})
	mustCall(t, b, "echo", map[string]any{"text": "2"})
	res := wantRefusal(t, a, "echo", map[string]any{"text": "3"}, diag.ToolRateLimited)
	limit, after, _ := runtime.LimitOf(res)
	if limit != "policies.limits[0]" || after <= 0 || after > 100*time.Millisecond {
		t.Fatalf("refused by %q after %v, want policies.limits[0] within (0, 100ms]", limit, after)
	}
	time.Sleep(after)
	mustCall(t, b, "echo", map[string]any{"text": "after the wait"})
	wantRefusal(t, a, "echo", map[string]any{"text": "and no more"}, diag.ToolRateLimited)
}

// TestRatesStoreDownClosed: with Redis stopped and on_error: closed, a
// call under a rate is refused with STATE_UNAVAILABLE within timeout_ms,
// and counts nothing; once Redis is back, calls are counted again.
func TestRatesStoreDownClosed(t *testing.T) {
	srv := testredis.Start(t)
	a, st := worker(t, srv.URL(), "closed", "    - {calls: 2, per: 1m}\n", nil)
	b, _ := worker(t, srv.URL(), "closed", "    - {calls: 2, per: 1m}\n", nil)
	mustCall(t, a, "echo", map[string]any{"text": "before"})
	srv.Stop()
	for _, ts := range []*runtime.Toolset{a, b} {
		start := time.Now()
		wantRefusal(t, ts, "echo", map[string]any{"text": "down"}, diag.StateUnavailable)
		if took := time.Since(start); took > 600*time.Millisecond {
			t.Errorf("refused after %v, want within timeout_ms (300ms)", took)
		}
	}
	if d, _ := st.Dependency(); d.State != driver.StateDown || d.Code != diag.StateUnavailable {
		t.Errorf("the store %+v, want down with STATE_UNAVAILABLE", d)
	}
	srv.Start()
	// A Redis restarted without persistence starts from full buckets.
	mustCall(t, b, "echo", map[string]any{"text": "back"})
	mustCall(t, a, "echo", map[string]any{"text": "back"})
	wantRefusal(t, b, "echo", map[string]any{"text": "counted again"}, diag.ToolRateLimited)
}

// TestRatesStoreSilentClosed: a store that accepts the connection and
// never answers costs a call serve.state.timeout_ms (300 ms), then
// STATE_UNAVAILABLE under on_error: closed; never a hang.
func TestRatesStoreSilentClosed(t *testing.T) {
	ts, _ := worker(t, testredis.Silent(t), "closed", "    - {calls: 2, per: 1m}\n", nil)
	start := time.Now()
	res := wantRefusal(t, ts, "echo", map[string]any{"text": "silence"}, diag.StateUnavailable)
	if took := time.Since(start); took < 250*time.Millisecond || took > 800*time.Millisecond {
		t.Errorf("refused after %v, want about timeout_ms (300ms)", took)
	}
	if !strings.Contains(text(res), "timeout_ms") {
		t.Errorf("refusal %q does not say the store did not answer in time", text(res))
	}
}

// TestRatesStoreDownOpen: with Redis stopped and on_error: open, calls are
// admitted by each worker's own counts, each counted as a fallback; once
// Redis is back the fleet's counts decide again, and nothing falls back.
func TestRatesStoreDownOpen(t *testing.T) {
	srv := testredis.Start(t)
	var fallbacks atomic.Int64
	a, _ := worker(t, srv.URL(), "open", "    - {calls: 3, per: 1m}\n", &fallbacks)
	b, _ := worker(t, srv.URL(), "open", "    - {calls: 3, per: 1m}\n", &fallbacks)
	srv.Stop()
	// Each worker admits its own 3.
	for _, ts := range []*runtime.Toolset{a, b} {
		for i := range 3 {
			mustCall(t, ts, "echo", map[string]any{"text": fmt.Sprint("fallback ", i)})
		}
		wantRefusal(t, ts, "echo", map[string]any{"text": "the worker's own limit"}, diag.ToolRateLimited)
	}
	if n := fallbacks.Load(); n != 6 {
		t.Errorf("%d fallbacks counted, want 6", n)
	}
	srv.Start()
	for i := range 3 {
		mustCall(t, []*runtime.Toolset{a, b}[i%2], "echo", map[string]any{"text": "counted by the fleet"})
	}
	wantRefusal(t, a, "echo", map[string]any{"text": "the fleet's limit"}, diag.ToolRateLimited)
	if n := fallbacks.Load(); n != 6 {
		t.Errorf("%d fallbacks counted with Redis back, want still 6", n)
	}
}

// BenchmarkCallRatesRedis is one caller's calls through a toolset under
// {calls: 1000000000, per: 1s, by: caller}, counted by the worker
// (memory) or in a redis-server on loopback (redis): the difference is
// what counting a rate for a fleet adds to a whole call, the worker's
// garbage collection and Redis sharing the machine's cores.
// internal/limits' BenchmarkAdmitRedis measures the admission alone.
func BenchmarkCallRatesRedis(b *testing.B) {
	limit := "    - {calls: 1000000000, per: 1s, by: caller}\n"
	srv := testredis.Start(b)
	for _, kind := range []string{"memory", "redis"} {
		b.Run(kind, func(b *testing.B) {
			var ts *runtime.Toolset
			if kind == "redis" {
				ts, _ = worker(b, srv.URL(), "closed", limit, nil)
			} else {
				ts = agentX(b, limit, runtime.Options{Kinds: testkinds.InMemory(b, nil)})
			}
			ctx := heddle.WithCaller(context.Background(), heddle.Identity{Subject: "alice@example.com"})
			args := map[string]any{"text": "hi"}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				res, err := ts.Call(ctx, "echo", args)
				lat = append(lat, time.Since(start))
				if err != nil || res.IsError {
					b.Fatalf("%v %v", runtime.RefusalCode(res), err)
				}
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "median-ns/call")
		})
	}
}
