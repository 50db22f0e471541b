package serve_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/serve"
)

// asCaller is a RoundTripper that sends the X-Heddle-* headers of one
// caller, as a proxy trusted by trustLoopback does.
type asCaller struct {
	subject, roles string
	base           http.RoundTripper
}

func (a asCaller) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Heddle-Subject", a.subject)
	if a.roles != "" {
		r.Header.Set("X-Heddle-Roles", a.roles)
	}
	return a.base.RoundTrip(r)
}

// connectMCP opens an MCP session on f's /mcp/{agent} as subject (with
// roles).
func connectMCP(t *testing.T, f *front, agent, subject, roles string) *mcp.ClientSession {
	t.Helper()
	return connectMCPAt(t, f, agent, subject, roles, "2025-11-25")
}

// connectMCPAt is connectMCP with the host speaking protocol version:
// "2025-11-25" opens a session, "2026-07-28" has none.
func connectMCPAt(t *testing.T, f *front, agent, subject, roles, version string) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   f.url + "/mcp/" + agent,
		HTTPClient: &http.Client{Transport: asCaller{subject: subject, roles: roles, base: tr}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect to /mcp/%s: %v", agent, err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("the host negotiated %s, want %s", got, version)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// initialize is a raw initialize request's body.
const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func (f *front) mcpRequest(method, path, body, subject string) *http.Request {
	req := f.request(method, path, body)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if subject != "" {
		req.Header.Set("X-Heddle-Subject", subject)
	}
	return req
}

// TestMCPFacade: /mcp/{agent} serves the agent's tools over Streamable
// HTTP behind serve.auth, as the caller it authenticates: a session is
// refused without a caller (401 with WWW-Authenticate), its calls go
// through the agent's policies as that caller, and a request of the
// session with another caller is refused 403. An unknown agent is 404 and
// a foreign Host 403, as on /v1/.
func TestMCPFacade(t *testing.T) {
	elsewhere := startFront(t, "serve:\n  auth: {kind: trusted_headers, proxies: [10.0.0.0/8]}\n"+inMemoryServer, map[string]string{"tools": mcpAgent})
	r := elsewhere.send(elsewhere.mcpRequest("POST", "/mcp/tools", initialize, ""))
	if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" || !r.contains(string(diag.Unauthenticated)) {
		t.Errorf("initialize without a caller: %d %q %s, want 401 UNAUTHENTICATED with WWW-Authenticate", r.status, r.header.Get("WWW-Authenticate"), r.body)
	}

	f := startFront(t, trustLoopback+inMemoryServer, map[string]string{"tools": mcpAgent, "other": mcpAgent})
	if r := f.send(f.mcpRequest("POST", "/mcp/nosuch", initialize, "alice")); r.status != http.StatusNotFound || !r.contains(string(diag.AgentUnknown)) {
		t.Errorf("an unknown agent: %d %s, want 404 AGENT_UNKNOWN", r.status, r.body)
	}
	req := f.mcpRequest("POST", "/mcp/tools", initialize, "alice")
	req.Host = "evil.example"
	if r := f.send(req); r.status != http.StatusForbidden || !r.contains(string(diag.Forbidden)) {
		t.Errorf("a foreign Host: %d %s, want 403 FORBIDDEN", r.status, r.body)
	}
	req = f.mcpRequest("POST", "/mcp/tools", initialize, "alice")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "https://evil.example")
	if r := f.send(req); r.status != http.StatusForbidden || !r.contains(string(diag.Forbidden)) {
		t.Errorf("a browser's request from another origin: %d %s, want 403 FORBIDDEN", r.status, r.body)
	}

	alice := connectMCP(t, f, "tools", "alice", "dev")
	ctx := context.Background()
	var names []string
	for tool, err := range alice.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "echo") || slices.Contains(names, "add") {
		t.Errorf("tools %v, want echo among them and not add, denied to alice whatever its arguments", names)
	}
	res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "over http"}})
	if err != nil || res.IsError || plantest.Text(res) != "over http" {
		t.Errorf("echo: %v %v %q", res, err, plantest.Text(res))
	}
	// add is denied to callers without the sre role: to them it does not
	// exist.
	if res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}}); err != nil || runtime.RefusalCode(res) != diag.ToolUnknown {
		t.Errorf("add as alice: %v %v, want TOOL_UNKNOWN", res, err)
	}
	sam := connectMCP(t, f, "tools", "sam", "sre")
	if res, err := sam.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}}); err != nil || res.IsError {
		t.Errorf("add as sam, an sre: %v %v", res, err)
	}
	// At 2026-07-28 each request is its caller's: no session to share.
	for _, c := range []struct {
		subject, roles string
		want           diag.Code
	}{{"alice", "dev", diag.ToolUnknown}, {"sam", "sre", ""}} {
		modern := connectMCPAt(t, f, "tools", c.subject, c.roles, "2026-07-28")
		var listed []string
		for tool, err := range modern.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			listed = append(listed, tool.Name)
		}
		if slices.Contains(listed, "add") != (c.want == "") {
			t.Errorf("tools at 2026-07-28 as %s: %v", c.subject, listed)
		}
		if res, err := modern.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "stateless"}}); err != nil || plantest.Text(res) != "stateless" {
			t.Errorf("echo at 2026-07-28 as %s: %v %v", c.subject, res, err)
		}
		if res, err := modern.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}}); err != nil || runtime.RefusalCode(res) != c.want {
			t.Errorf("add at 2026-07-28 as %s: %v %v, want code %q", c.subject, res, err, c.want)
		}
	}

	// alice's session, used by bob, or at another path.
	list := `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`
	req = f.mcpRequest("POST", "/mcp/tools", list, "bob")
	req.Header.Set("Mcp-Session-Id", alice.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if r := f.send(req); r.status != http.StatusForbidden || !r.contains(string(diag.Forbidden)) {
		t.Errorf("alice's session as bob: %d %s, want 403 FORBIDDEN", r.status, r.body)
	}
	req = f.mcpRequest("POST", "/mcp/other", list, "alice")
	req.Header.Set("X-Heddle-Roles", "dev")
	req.Header.Set("Mcp-Session-Id", alice.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if r := f.send(req); r.status != http.StatusNotFound {
		t.Errorf("alice's session at another agent's path: %d %s, want 404", r.status, r.body)
	}
	req = f.mcpRequest("POST", "/mcp/tools", list, "alice")
	req.Header.Set("X-Heddle-Roles", "dev")
	req.Header.Set("Mcp-Session-Id", alice.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if r := f.send(req); r.status != http.StatusOK || !r.contains(`"echo"`) {
		t.Errorf("alice's session as alice: %d %s, want 200 with the tools", r.status, r.body)
	}
}

// TestMCPReload: an MCP session opened before a reload hears of it — the
// host gets notifications/tools/list_changed and lists the new
// generation's tools — and then of the new generation's own upstream
// changes.
func TestMCPReload(t *testing.T) {
	m := metrics.New()
	before := openTestRuntime(t, trustLoopback+inMemoryServer, map[string]string{"tools": `capabilities: [{kind: mcp, server: srv, include: [echo]}]`}, m)
	gens := runtime.NewGenerations(before)
	f := startFrontWith(t, "", nil, serve.Options{Generations: gens})
	changed := make(chan struct{}, 16)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   f.url + "/mcp/tools",
		HTTPClient: &http.Client{Transport: asCaller{subject: "alice", base: tr}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	names := func() string {
		t.Helper()
		var ns []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			ns = append(ns, tool.Name)
		}
		slices.Sort(ns)
		return strings.Join(ns, " ")
	}
	if got := names(); got != "echo" {
		t.Fatalf("before the reload: tools %q, want echo", got)
	}
	wait := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("%s: no notifications/tools/list_changed", what)
		}
	}

	after := openTestRuntime(t, trustLoopback+inMemoryServer, map[string]string{"tools": `capabilities: [{kind: mcp, server: srv, exclude: [add, big, env, fail, image, pid, remove_tool, sleep, spawn_child]}]`}, m)
	gens.Swap(after)
	wait("after the reload")
	if got := names(); got != "add_tool echo" {
		t.Errorf("after the reload: tools %q, want add_tool echo", got)
	}

	// An upstream change in the new generation: its server gains a tool.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_tool", Arguments: map[string]any{"name": "late_one"}}); err != nil || res.IsError {
		t.Fatalf("add_tool: %v %v", res, err)
	}
	wait("after the new generation's server added a tool")
	if got := names(); got != "add_tool echo late_one" {
		t.Errorf("after the upstream change: tools %q, want add_tool echo late_one", got)
	}
	_ = gens.Close()
}

// inConversation adds the Heddle-Conversation header to each request.
type inConversation struct {
	id   string
	base http.RoundTripper
}

func (c inConversation) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(serve.ConversationHeader, c.id)
	return c.base.RoundTrip(r)
}

// TestMCPConversationAt2026: hosts of 2026-07-28 have no session: the
// requests naming one conversation (Heddle-Conversation) share what
// load_tools loaded, for their caller only, and a host listening in the
// conversation (subscriptions/listen) is sent list_changed when it loads.
func TestMCPConversationAt2026(t *testing.T) {
	// A write timeout shorter than the test: a listening host's stream
	// outlives it.
	f := startFront(t, trustLoopback+"  limits: {write_timeout_ms: 300}\n"+inMemoryServer, map[string]string{"d": deferAgent})
	connect := func(subject, conv string, changed chan<- struct{}) *mcp.ClientSession {
		t.Helper()
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		copts := &mcp.ClientOptions{}
		if changed != nil {
			copts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, copts).Connect(t.Context(), &mcp.StreamableClientTransport{
			Endpoint:   f.url + "/mcp/d",
			HTTPClient: &http.Client{Transport: inConversation{id: conv, base: asCaller{subject: subject, base: tr}}},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s, want 2026-07-28", v)
		}
		return cs
	}
	names := func(cs *mcp.ClientSession) string {
		t.Helper()
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range res.Tools {
			out = append(out, tool.Name)
		}
		return strings.Join(out, " ")
	}
	changed := make(chan struct{}, 4)
	listener := connect("alice", "c1", changed)
	caller := connect("alice", "c1", nil)
	other := connect("alice", "c2", nil)
	bob := connect("bob", "c1", nil)
	if got := names(listener); strings.Contains(got, "add") {
		t.Fatalf("before load_tools the conversation lists %s", got)
	}
	time.Sleep(600 * time.Millisecond) // past write_timeout_ms: the listener's stream must outlive it
	res, err := caller.CallTool(t.Context(), &mcp.CallToolParams{Name: "load_tools", Arguments: map[string]any{"names": []string{"add"}}})
	if err != nil || res.IsError {
		t.Fatalf("load_tools: %v %v", res, err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the conversation's listener heard no list_changed within 10 s of load_tools")
	}
	if got := names(listener); !strings.Contains(got, "add") {
		t.Errorf("after load_tools the conversation lists %s, without add", got)
	}
	res, err = caller.CallTool(t.Context(), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil || res.IsError {
		t.Errorf("add in the conversation that loaded it: %v %v", res, err)
	}
	for who, cs := range map[string]*mcp.ClientSession{"another conversation": other, "another caller's c1": bob} {
		if got := names(cs); strings.Contains(got, "add") {
			t.Errorf("%s lists %s: what c1 loaded is alice's c1's alone", who, got)
		}
	}
}

// TestMCPListenNotInFlight: a 2026-07-28 host's subscriptions/listen does
// not hold one of serve.limits.max_in_flight's places: with one place and
// a host listening, a call is served.
func TestMCPListenNotInFlight(t *testing.T) {
	f := startFront(t, trustLoopback+"  limits: {max_in_flight: 1}\n"+inMemoryServer, map[string]string{"tools": mcpAgent})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	}).Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   f.url + "/mcp/tools",
		HTTPClient: &http.Client{Transport: asCaller{subject: "alice", base: tr}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28 (and its subscriptions/listen)", v)
	}
	req := f.mcpRequest("POST", "/mcp/tools", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, "alice")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	if r := f.send(req); r.status != http.StatusOK || !r.contains(`"echo"`) {
		t.Errorf("tools/list while a host listens, with one place in flight: %d %s", r.status, r.body)
	}
}
