package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/heddlehq/heddle/config/setting"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/benchpair"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/internal/testredis"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
	"github.com/heddlehq/heddle/serve"
	"github.com/heddlehq/heddle/statestore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sharedState opens a store of kind redis on srv, as serve.state would,
// closed when t ends.
func sharedState(t *testing.T, srv *testredis.Server) *statestore.Store {
	t.Helper()
	t.Setenv("HEDDLE_TEST_REDIS_URL", srv.URL())
	ref := setting.Ref{Scheme: "env", Name: "HEDDLE_TEST_REDIS_URL"}
	st, err := statestore.Open(context.Background(), plan.ServeState{Kind: setting.StateRedis, URLRef: &ref, Prefix: "heddle-test:", OnError: setting.StateClosed, TimeoutMS: 250},
		secrets.New(secrets.Options{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// TestConversationsShared: two workers sharing a store of kind redis are
// one conversation: what load_tools loaded at one is called at the other,
// for the caller and conversation that loaded it alone; with the store
// down the conversation is STATE_UNAVAILABLE, never silently forgotten.
func TestConversationsShared(t *testing.T) {
	srv := testredis.Start(t)
	agents := map[string]string{"d": deferAgent}
	one := startFrontWith(t, trustLoopback+inMemoryServer, agents, serve.Options{State: sharedState(t, srv)})
	two := startFrontWith(t, trustLoopback+inMemoryServer, agents, serve.Options{State: sharedState(t, srv)})
	call := func(f *front, tool, body, subject, conv string) *response {
		t.Helper()
		req := f.request("POST", "/v1/agents/d/tools/"+tool, body)
		req.Header.Set("X-Heddle-Subject", subject)
		req.Header.Set(serve.ConversationHeader, conv)
		return f.send(req)
	}
	code := func(r *response) diag.Code {
		t.Helper()
		var res struct {
			Meta struct {
				Code diag.Code `json:"code"`
			} `json:"_meta"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &res) != nil {
			t.Fatalf("call: %d %s", r.status, r.body)
		}
		return res.Meta.Code
	}
	if c := code(call(one, runtime.LoadToolsName, `{"names": ["add"]}`, "alice", "c1")); c != "" {
		t.Fatalf("load_tools at worker one: %q", c)
	}
	if c := code(call(two, "add", `{"a": 1, "b": 2}`, "alice", "c1")); c != "" {
		t.Errorf("add at worker two, in the conversation that loaded it at worker one: %q", c)
	}
	for _, other := range []struct{ subject, conv string }{{"alice", "c2"}, {"bob", "c1"}} {
		if c := code(call(two, "add", `{"a": 1, "b": 2}`, other.subject, other.conv)); c != diag.ToolUnknown {
			t.Errorf("%s in %s: add %q, want TOOL_UNKNOWN", other.subject, other.conv, c)
		}
	}
	srv.Stop()
	if r := call(two, "add", `{"a": 1, "b": 2}`, "alice", "c1"); r.status != http.StatusServiceUnavailable || !r.contains(string(diag.StateUnavailable)) {
		t.Errorf("with the store down: %d %s, want 503 STATE_UNAVAILABLE", r.status, r.body)
	}
	// This Redis keeps nothing on disk: back, it has forgotten, and the
	// conversation starts again (a Redis with persistence remembers).
	srv.Start()
	if c := code(call(two, "add", `{"a": 1, "b": 2}`, "alice", "c1")); c != diag.ToolUnknown {
		t.Errorf("with the store back, empty: %q, want TOOL_UNKNOWN", c)
	}
	if c := code(call(two, runtime.LoadToolsName, `{"names": ["add"]}`, "alice", "c1")); c != "" {
		t.Fatalf("load_tools with the store back: %q", c)
	}
	if c := code(call(one, "add", `{"a": 1, "b": 2}`, "alice", "c1")); c != "" {
		t.Errorf("add at worker one with the store back: %q", c)
	}
}

// TestApprovalStateShared: two workers with one serve.approval_key_ref and
// a shared store are one approver at 2026-07-28: a state sealed at one is
// accepted at the other, once in the fleet.
func TestApprovalStateShared(t *testing.T) {
	srv := testredis.Start(t)
	t.Setenv("HEDDLE_TEST_APPROVAL_KEY", "0123456789abcdef0123456789abcdef-fleet")
	api := trustLoopback + "  approval_key_ref: ${env:HEDDLE_TEST_APPROVAL_KEY}\n" + inMemoryServer
	agents := map[string]string{"tools": "capabilities: [{kind: mcp, server: srv}]\npolicies:\n  rules:\n    - {when: 'tool.name == \"echo\"', effect: ask}\n"}
	one := startFrontWith(t, api, agents, serve.Options{State: sharedState(t, srv)})
	two := startFrontWith(t, api, agents, serve.Options{State: sharedState(t, srv)})
	call := func(f *front, params string) map[string]any {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + params +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
		req := f.mcpRequest("POST", "/mcp/tools", body, "alice")
		for k, v := range map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"} {
			req.Header.Set(k, v)
		}
		r := f.send(req)
		var msg map[string]any
		for _, line := range strings.Split(string(r.body), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &msg) == nil {
				return msg
			}
		}
		if json.Unmarshal(r.body, &msg) != nil {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return msg
	}
	first := call(one, "")
	res, _ := first["result"].(map[string]any)
	state, _ := res["requestState"].(string)
	if res["resultType"] != "input_required" || state == "" {
		t.Fatalf("first round at worker one: %v", first)
	}
	retry := `"inputResponses":{"heddle_approval":{"action":"accept"}},"requestState":"` + state + `",`
	got := call(two, retry)
	if res, _ := got["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Fatalf("the retry at worker two: %v, want the tool's result", got)
	}
	replay := call(one, retry)
	e, _ := replay["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	if e == nil || e["code"] != float64(-32602) || data["code"] != string(diag.RequestStateInvalid) {
		t.Errorf("the same retry at worker one: %v, want -32602 REQUEST_STATE_INVALID (accepted once in the fleet)", replay)
	}
}

// alternate sends each request to the next of hosts in turn, as a load
// balancer that knows nothing of sessions does.
type alternate struct {
	hosts []string
	n     atomic.Int64
	base  http.RoundTripper
}

func (a *alternate) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Host = a.hosts[int(a.n.Add(1))%len(a.hosts)]
	r.Host = r.URL.Host
	return a.base.RoundTrip(r)
}

// TestSessionMovesInFleet: two workers sharing the state and the sealing
// key serve a facade session of 2025-11-25 whichever one a request
// reaches: lists, calls and what load_tools loaded hold across them, and
// the session stays its caller's.
func TestSessionMovesInFleet(t *testing.T) {
	srv := testredis.Start(t)
	t.Setenv("HEDDLE_TEST_APPROVAL_KEY", "0123456789abcdef0123456789abcdef-fleet")
	api := trustLoopback + "  approval_key_ref: ${env:HEDDLE_TEST_APPROVAL_KEY}\n" + inMemoryServer
	agents := map[string]string{"d": deferAgent}
	one := startFrontWith(t, api, agents, serve.Options{State: sharedState(t, srv)})
	two := startFrontWith(t, api, agents, serve.Options{State: sharedState(t, srv)})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	lb := &alternate{hosts: []string{one.addr, two.addr}, base: asCaller{subject: "alice", base: tr}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: one.url + "/mcp/d", HTTPClient: &http.Client{Transport: lb}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	for i := range 6 {
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Fatalf("tools/list %d of the session, alternating workers: %v", i+1, err)
		}
	}
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: runtime.LoadToolsName, Arguments: map[string]any{"names": []string{"add"}}}); err != nil || res.IsError {
		t.Fatalf("load_tools: %v %v", res, err)
	}
	for i := range 4 {
		if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": i}}); err != nil || res.IsError {
			t.Errorf("add %d, after load_tools at another worker: %v %v", i+1, res, err)
		}
	}
	// The session is alice's at either worker.
	for _, f := range []*front{one, two} {
		req := f.mcpRequest("POST", "/mcp/d", `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, "mallory")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if r := f.send(req); r.status != http.StatusForbidden {
			t.Errorf("alice's session as mallory at %s: %d %s, want 403", f.addr, r.status, r.body)
		}
	}
}

// BenchmarkStateCall: one caller's call of the invoke API in a
// conversation (Heddle-Conversation) under a policies.limits rate, served
// by a worker whose state is its own memory and by one whose state is a
// redis-server on loopback (the rate counted by the fleet's script, the
// conversation read from the store), in interleaved rounds; it reports
// each side's median and what the store adds.
func BenchmarkStateCall(b *testing.B) {
	srv := testredis.Start(b)
	b.Setenv("HEDDLE_TEST_REDIS_URL", srv.URL())
	ref := setting.Ref{Scheme: "env", Name: "HEDDLE_TEST_REDIS_URL"}
	st, err := statestore.Open(context.Background(), plan.ServeState{Kind: setting.StateRedis, URLRef: &ref, Prefix: "heddle-bench:", OnError: setting.StateClosed, TimeoutMS: 250},
		secrets.New(secrets.Options{}), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	agents := map[string]string{"a": "capabilities: [{kind: mcp, server: srv}]\npolicies:\n  limits:\n    - {calls: 1000000000, per: 1s, by: caller}\n"}
	open := func(opts runtime.Options) *runtime.Runtime {
		p := plantest.Must(b, trustLoopback+inMemoryServer, agents, usecases...)
		opts.Kinds = testkinds.InMemory(b, nil)
		rt, err := runtime.Open(context.Background(), p, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = rt.Close() })
		return rt
	}
	fronts := map[string]*front{
		"memory": startFrontWith(b, "", nil, serve.Options{Generations: runtime.NewGenerations(open(runtime.Options{}))}),
		"redis":  startFrontWith(b, "", nil, serve.Options{Generations: runtime.NewGenerations(open(runtime.Options{Rates: st.Rates()})), State: st}),
	}
	sides := map[string]func() error{}
	for name, f := range fronts {
		sides[name] = func() error {
			req := f.request("POST", "/v1/agents/a/tools/echo", `{"text":"hi"}`)
			req.Header.Set("X-Heddle-Subject", "alice")
			req.Header.Set(serve.ConversationHeader, "c1")
			resp, err := f.client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: HTTP %d", name, resp.StatusCode)
			}
			return nil
		}
	}
	p50 := benchpair.Medians(benchpair.Rounds(b, []string{"memory", "redis"}, sides))
	b.ReportMetric(p50["memory"]/1e3, "memory-p50-µs")
	b.ReportMetric(p50["redis"]/1e3, "redis-p50-µs")
	b.ReportMetric((p50["redis"]-p50["memory"])/1e3, "redis-added-p50-µs")
}
