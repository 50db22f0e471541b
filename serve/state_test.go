package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/config/setting"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/testredis"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
	"github.com/heddlehq/heddle/serve"
	"github.com/heddlehq/heddle/statestore"
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
