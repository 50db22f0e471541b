package mcpfacade_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/mcpfacade"
	"github.com/heddlehq/heddle/runtime"
)

// inMemoryServer is an ai: section with one MCP server, srv, reached over
// an in-memory transport (testmcp.DialInMemory): the project's test
// server, whose add_tool is destructive.
const inMemoryServer = "ai:\n  mcp_servers:\n    srv: {url: http://127.0.0.1:1/mcp}\n"

// agent grants srv, asks approval for destructive tools, and lets only
// callers with the sre role call add.
const agent = "description: Tools of the test server.\ncapabilities: [{kind: mcp, server: srv}]\n" +
	"policies:\n  approval: ask\n  rules:\n    - {when: 'tool.original_name == \"add\" && !(\"sre\" in caller.roles)', effect: deny}\n"

// openRuntime opens a runtime of agent x over an in-memory test server
// whose add_tool is destructive; it is closed when the test ends.
func openRuntime(t testing.TB) *runtime.Runtime {
	t.Helper()
	p := plantest.Must(t, inMemoryServer, map[string]string{"x": agent})
	rt, err := runtime.Open(context.Background(), p, runtime.Options{Kinds: testkinds.InMemory(t, &testmcp.Options{Destructive: []string{"add_tool"}})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// host is a go-sdk client connected to a facade session of agent x over
// in-memory transports.
type host struct {
	cs      *mcp.ClientSession
	changed chan struct{}
}

// connect serves agent x of rt as caller to a client with copts (its
// list_changed handler is the host's); everything ends with the test.
func connect(t *testing.T, rt *runtime.Runtime, caller heddle.Identity, copts *mcp.ClientOptions) *host {
	t.Helper()
	return connectAt(t, rt, caller, copts, "")
}

// connectAt is connect with the host speaking protocol version (go-sdk's
// own choice when ""), which the test requires it to negotiate.
func connectAt(t *testing.T, rt *runtime.Runtime, caller heddle.Identity, copts *mcp.ClientOptions, version string) *host {
	t.Helper()
	ts, err := rt.Toolset("x")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() {
		served <- mcpfacade.Serve(ctx, ts, st, &mcpfacade.Options{Agent: "x", Caller: caller, Watch: rt.Watch})
	}()
	h := &host{changed: make(chan struct{}, 16)}
	if copts == nil {
		copts = &mcp.ClientOptions{}
	}
	copts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case h.changed <- struct{}{}:
		default:
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; version != "" && got != version {
		t.Errorf("the host negotiated %s, want %s", got, version)
	}
	h.cs = cs
	t.Cleanup(func() {
		_ = cs.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		cancel()
	})
	return h
}

func (h *host) call(t *testing.T, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func (h *host) names(t *testing.T) []string {
	t.Helper()
	var out []string
	for tool, err := range h.cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool.Name)
	}
	return out
}

// TestToolsAreTheToolsets: the host lists the toolset's tools its caller
// may use, under their model-facing names and with their descriptions and
// hints, and calls them through the toolset. A tool the rules deny the
// caller whatever its arguments is neither listed nor known.
func TestToolsAreTheToolsets(t *testing.T) {
	t.Parallel()
	rt := openRuntime(t)
	alice := heddle.Identity{Subject: "alice"}
	h := connect(t, rt, alice, nil)
	ts, _ := rt.Toolset("x")
	want, err := ts.Tools(heddle.WithCaller(context.Background(), alice))
	if err != nil {
		t.Fatal(err)
	}
	all, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(all)-1 || slices.ContainsFunc(want, func(tl runtime.Tool) bool { return tl.Name == "add" }) {
		t.Fatalf("alice's toolset has %d of %d tools, add among them; want every tool but add", len(want), len(all))
	}
	got := map[string]*mcp.Tool{}
	for tool, err := range h.cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got[tool.Name] = tool
	}
	if len(got) != len(want) {
		t.Fatalf("the host lists %d tools, the toolset has %d", len(got), len(want))
	}
	for _, w := range want {
		g := got[w.Name]
		if g == nil {
			t.Errorf("%s is not listed", w.Name)
			continue
		}
		if g.Description != w.Description || g.Annotations == nil || g.Annotations.ReadOnlyHint != w.ReadOnly || g.Annotations.DestructiveHint == nil || *g.Annotations.DestructiveHint != w.Destructive {
			t.Errorf("%s is listed as %+v (annotations %+v), the toolset has %+v", w.Name, g, g.Annotations, w)
		}
	}
	if res := h.call(t, "echo", map[string]any{"text": "hi"}); res.IsError || plantest.Text(res) != "hi" {
		t.Errorf("echo = %q (isError %v)", plantest.Text(res), res.IsError)
	}
	// Policies see the session's caller: alice has no sre role, so add
	// does not exist for her.
	if res := h.call(t, "add", map[string]any{"a": 1, "b": 2}); runtime.RefusalCode(res) != diag.ToolUnknown {
		t.Errorf("add as alice: code %q, want TOOL_UNKNOWN", runtime.RefusalCode(res))
	}
	// Arguments that are not an object, and an unknown tool.
	if res := h.call(t, "echo", map[string]any{}); runtime.RefusalCode(res) != diag.ToolArgsInvalid {
		t.Errorf("echo without text: code %q, want TOOL_ARGS_INVALID", runtime.RefusalCode(res))
	}
}

// TestCallerOfTheSession: the session's caller is the caller of every
// call, as policies see it.
func TestCallerOfTheSession(t *testing.T) {
	t.Parallel()
	rt := openRuntime(t)
	h := connect(t, rt, heddle.Identity{Subject: "sam", Roles: []string{"sre"}}, nil)
	if res := h.call(t, "add", map[string]any{"a": 1, "b": 2}); res.IsError || plantest.Text(res) != `{"sum":3}` {
		t.Errorf("add as an sre = %q (code %q)", plantest.Text(res), runtime.RefusalCode(res))
	}
}

// TestApprovalByElicitation: a destructive tool's call is asked of the
// host's user, at 2025-11-25 by elicitation in the session, at 2026-07-28
// by an input_required result the host answers and retries: accept runs
// it, decline and cancel refuse it with TOOL_APPROVAL_REQUIRED, and a host
// that cannot elicit gets the refusal without being asked (at 2026-07-28,
// -32021: the request lacks a capability the call needs).
func TestApprovalByElicitation(t *testing.T) {
	t.Parallel()
	rt := openRuntime(t)
	for _, c := range []struct{ version, action string }{
		{"2025-11-25", "accept"}, {"2025-11-25", "decline"}, {"2025-11-25", "cancel"}, {"2025-11-25", ""},
		{"2026-07-28", "accept"}, {"2026-07-28", "decline"}, {"2026-07-28", "cancel"}, {"2026-07-28", ""},
	} {
		version, action := c.version, c.action
		t.Run(version+"/action="+action, func(t *testing.T) {
			var asked []string
			copts := &mcp.ClientOptions{}
			if action != "" {
				copts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					return &mcp.ElicitResult{Action: action}, nil
				}
			}
			h := connectAt(t, rt, heddle.Identity{Subject: "alice"}, copts, version)
			if action == "" && version == "2026-07-28" {
				// No session to have declared elicitation in: the request
				// lacks a capability the call needs, MCP's -32021.
				_, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add_tool", Arguments: map[string]any{"name": "made_by_none"}})
				var rpcErr *jsonrpc.Error
				if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(string(rpcErr.Data), `"code":"TOOL_APPROVAL_REQUIRED"`) || !strings.Contains(string(rpcErr.Data), `"elicitation"`) {
					t.Errorf("add_tool from a host without elicitation: %v, want -32021 with TOOL_APPROVAL_REQUIRED and elicitation required", err)
				}
				return
			}
			res := h.call(t, "add_tool", map[string]any{"name": "made_by_" + action + version})
			wantAsked := 1
			switch action {
			case "accept":
				if res.IsError {
					t.Errorf("add_tool accepted: code %q (%s)", runtime.RefusalCode(res), plantest.Text(res))
				}
			case "":
				wantAsked = 0
				fallthrough
			default:
				if runtime.RefusalCode(res) != diag.ToolApprovalRequired {
					t.Errorf("add_tool %s: code %q (%s), want TOOL_APPROVAL_REQUIRED", action, runtime.RefusalCode(res), plantest.Text(res))
				}
			}
			if len(asked) != wantAsked {
				t.Fatalf("the host was asked %d times, want %d", len(asked), wantAsked)
			}
		})
	}
}

// TestListChangedIsForwarded: when an upstream server's tools change, the
// host is sent notifications/tools/list_changed — in its session at
// 2025-11-25, on its subscriptions/listen stream at 2026-07-28 — and lists
// the new tool.
func TestListChangedIsForwarded(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			listChangedIsForwarded(t, version)
		})
	}
}

func listChangedIsForwarded(t *testing.T, version string) {
	rt := openRuntime(t)
	h := connectAt(t, rt, heddle.Identity{Subject: "alice"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	}, version)
	if slices.Contains(h.names(t), "fresh") {
		t.Fatal("fresh is listed before it is added")
	}
	if res := h.call(t, "add_tool", map[string]any{"name": "fresh"}); res.IsError {
		t.Fatalf("add_tool: %s", plantest.Text(res))
	}
	select {
	case <-h.changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed within 10 s of the upstream change")
	}
	if !slices.Contains(h.names(t), "fresh") {
		t.Errorf("after list_changed the host lists %v, without fresh", h.names(t))
	}
	if res := h.call(t, "fresh", map[string]any{"k": "v"}); res.IsError {
		t.Errorf("fresh: %s", plantest.Text(res))
	}
}

// TestNamesTheInvokeAPIAccepts: a host may call a tool by the names the
// invoke API accepts — qualified (srv__echo) and dotted (srv.echo) — and a
// name that is no tool at all is a refusal with a code, not a JSON-RPC
// error without one.
func TestNamesTheInvokeAPIAccepts(t *testing.T) {
	t.Parallel()
	h := connect(t, openRuntime(t), heddle.Identity{Subject: "alice", Roles: []string{"sre"}}, nil)
	for _, name := range []string{"srv.echo", "srv__echo"} {
		if res := h.call(t, name, map[string]any{"text": "hi"}); res.IsError || text(res) != "hi" {
			t.Errorf("%s: %+v", name, res)
		}
	}
	res := h.call(t, "no_such_tool", nil)
	if code, _ := res.Meta["code"].(string); !res.IsError || code != string(diag.ToolUnknown) {
		t.Errorf("an unknown name: %+v, want a TOOL_UNKNOWN refusal", res)
	}
	// A destructive tool by its dotted name asks approval as by its own,
	// at either revision.
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		asked := 0
		h := connectAt(t, openRuntime(t), heddle.Identity{Subject: "alice"}, &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked++
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		}, version)
		if res := h.call(t, "srv.add_tool", map[string]any{"name": "dotted"}); res.IsError || asked != 1 {
			t.Errorf("srv.add_tool at %s: %s (code %q) after %d approvals asked, want it run after 1", version, text(res), runtime.RefusalCode(res), asked)
		}
	}
}

// text is a result's text content.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestResultTypeOfNamesNotOffered: at 2026-07-28 a call by a name the host
// was not offered (a dotted name) is answered with its resultType, as a
// call of a tool on the server is: input_required when it asks approval.
func TestResultTypeOfNamesNotOffered(t *testing.T) {
	t.Parallel()
	rt := openRuntime(t)
	ts, err := rt.Toolset("x")
	if err != nil {
		t.Fatal(err)
	}
	h := mcpfacade.NewHandler(&mcpfacade.HandlerOptions{
		Toolset: func(string) (mcpfacade.Toolset, error) { return ts, nil },
		Agent:   func(*http.Request) string { return "x" },
	})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Close(); srv.Close() })
	for _, c := range []struct{ name, want string }{{"srv.add_tool", "input_required"}, {"add_tool", "input_required"}, {"srv.echo", "complete"}} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + c.name + `","arguments":{"name":"n","text":"t"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": c.name} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"resultType":"`+c.want+`"`) {
			t.Errorf("%s: %s, want resultType %s", c.name, b, c.want)
		}
	}
}

// TestListsAt2026: at 2026-07-28 the tools list is the caller's own
// (cacheScope private, ttlMs ListTTL), and the features the facade does
// not serve are methods not found (-32601).
func TestListsAt2026(t *testing.T) {
	t.Parallel()
	rt := openRuntime(t)
	ts, err := rt.Toolset("x")
	if err != nil {
		t.Fatal(err)
	}
	h := mcpfacade.NewHandler(&mcpfacade.HandlerOptions{
		Toolset: func(string) (mcpfacade.Toolset, error) { return ts, nil },
		Agent:   func(*http.Request) string { return "x" },
	})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Close(); srv.Close() })
	post := func(method string) string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b)
	}
	if b := post("tools/list"); !strings.Contains(b, `"cacheScope":"private"`) || !strings.Contains(b, `"ttlMs":`+strconv.Itoa(mcpfacade.ListTTL)) {
		t.Errorf("tools/list: %s, want cacheScope private and ttlMs %d", b, mcpfacade.ListTTL)
	}
	for _, m := range []string{"prompts/list", "resources/list", "resources/templates/list"} {
		if b := post(m); !strings.Contains(b, `"code":-32601`) {
			t.Errorf("%s: %s, want -32601", m, b)
		}
	}
}
