package serve_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/serve"
	"github.com/heddlehq/heddle/wire"
)

// deferAgent defers the test server's tools, and denies env of HOME by a
// rule.
const deferAgent = "capabilities: [{kind: mcp, server: srv, include: [echo, add, env], defer: true}]\n" +
	"policies:\n  rules:\n    - {when: 'tool.name == \"env\" && args.name == \"HOME\"', effect: deny}\n"

// TestConversations: the invoke API keeps a conversation's view by caller
// and Heddle-Conversation id: what one conversation loaded is listed and
// callable there only, not in another conversation, not for another
// caller with the same id, not in a request without the header; and a
// loaded tool is still denied by a rule.
func TestConversations(t *testing.T) {
	f := startFront(t, trustLoopback+inMemoryServer, map[string]string{"d": deferAgent})
	send := func(method, path, body, subject, conv string) *response {
		t.Helper()
		req := f.request(method, path, body)
		if subject != "" {
			req.Header.Set("X-Heddle-Subject", subject)
		}
		if conv != "" {
			req.Header.Set(serve.ConversationHeader, conv)
		}
		return f.send(req)
	}
	names := func(subject, conv string) []string {
		t.Helper()
		r := send("GET", "/v1/agents/d/tools", "", subject, conv)
		if r.status != 200 {
			t.Fatalf("tools: %d %s", r.status, r.body)
		}
		var tools []wire.Tool
		if err := json.Unmarshal(r.body, &tools); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Name)
		}
		return out
	}
	code := func(r *response) diag.Code {
		t.Helper()
		var res struct {
			IsError bool `json:"isError"`
			Meta    struct {
				Code diag.Code `json:"code"`
			} `json:"_meta"`
		}
		if r.status != 200 || json.Unmarshal(r.body, &res) != nil {
			t.Fatalf("call: %d %s", r.status, r.body)
		}
		if res.IsError && res.Meta.Code == "" {
			return "TOOL_ERROR"
		}
		return res.Meta.Code
	}
	meta := []string{runtime.LoadToolsName, runtime.SearchToolsName}
	if got := names("alice", "c1"); !slices.Equal(got, meta) {
		t.Fatalf("a new conversation lists %v, want %v", got, meta)
	}
	if r := send("POST", "/v1/agents/d/tools/"+runtime.SearchToolsName, `{"query": "numbers"}`, "alice", "c1"); !r.contains(`"name":"add"`) {
		t.Fatalf("search_tools: %s", r.body)
	}
	if c := code(send("POST", "/v1/agents/d/tools/add", `{"a": 1, "b": 2}`, "alice", "c1")); c != diag.ToolUnknown {
		t.Fatalf("add before load_tools: %q, want TOOL_UNKNOWN", c)
	}
	if c := code(send("POST", "/v1/agents/d/tools/"+runtime.LoadToolsName, `{"names": ["add", "env"]}`, "alice", "c1")); c != "" {
		t.Fatalf("load_tools: %q", c)
	}
	if got, want := names("alice", "c1"), []string{"add", "env", runtime.LoadToolsName, runtime.SearchToolsName}; !slices.Equal(got, want) {
		t.Errorf("after load_tools: %v, want %v", got, want)
	}
	if c := code(send("POST", "/v1/agents/d/tools/add", `{"a": 1, "b": 2}`, "alice", "c1")); c != "" {
		t.Errorf("add after load_tools: %q", c)
	}
	if c := code(send("POST", "/v1/agents/d/tools/env", `{"name": "HOME"}`, "alice", "c1")); c != diag.ToolDenied {
		t.Errorf("env after load_tools: %q, want TOOL_DENIED", c)
	}
	for _, other := range []struct{ subject, conv string }{{"alice", "c2"}, {"bob", "c1"}, {"alice", ""}} {
		if got := names(other.subject, other.conv); !slices.Equal(got, meta) {
			t.Errorf("%s, conversation %q lists %v, want %v", other.subject, other.conv, got, meta)
		}
		if c := code(send("POST", "/v1/agents/d/tools/add", `{"a": 1, "b": 2}`, other.subject, other.conv)); c != diag.ToolUnknown {
			t.Errorf("%s, conversation %q: add %q, want TOOL_UNKNOWN", other.subject, other.conv, c)
		}
	}
	for _, bad := range []string{"has space", "ü", strings.Repeat("x", serve.MaxConversationID+1)} {
		if r := send("GET", "/v1/agents/d/tools", "", "alice", bad); r.status != 400 || !slices.Equal(codes(t, r), []diag.Code{diag.RequestInvalid}) {
			t.Errorf("conversation %q: %d %s, want 400 REQUEST_INVALID", bad, r.status, r.body)
		}
	}
}
