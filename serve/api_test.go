package serve_test

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
)

// testAgents are the agents of most tests: a, granting the in-memory MCP
// server srv; u, granting the use cases, with a short tool_timeout_ms.
var testAgents = map[string]string{
	"a": mcpAgent,
	"u": "capabilities: [{kind: usecase, keys: [serve.echo, serve.hold]}]\npolicies: {tool_timeout_ms: 300}\n",
}

// startTestFront is startFront of the test agents, trusting loopback's
// identity headers.
func startTestFront(t testing.TB) *front {
	return startFront(t, trustLoopback+inMemoryServer, testAgents)
}

// codes returns the codes a JSON answer carries where it reports a
// failure — {"error": {"code"}}, a refusal's {"_meta": {"code"}} — and
// fails the test when one is empty, the answer is not JSON, or it reports
// no failure.
func codes(t *testing.T, r *response) []diag.Code {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("status %d, not one JSON object: %v\n%s", r.status, err, r.body)
	}
	var out []diag.Code
	add := func(where string, code any) {
		s, _ := code.(string)
		if s == "" {
			t.Errorf("%s has no code: %s", where, r.body)
		}
		out = append(out, diag.Code(s))
	}
	if e, ok := v["error"].(map[string]any); ok {
		add("the error", e["code"])
	}
	if v["isError"] == true {
		meta, _ := v["_meta"].(map[string]any)
		add("a refusal", meta["code"])
	}
	if len(out) == 0 {
		t.Fatalf("status %d reports no failure: %s", r.status, r.body)
	}
	return out
}

// TestServeHandler drives the invoke API and the probes over real HTTP: the
// caller's roles reach the policy, and calls are counted by outcome.
func TestServeHandler(t *testing.T) {
	f := startTestFront(t)
	if r := f.get("/livez"); r.status != 200 || string(r.body) != "ok\n" {
		t.Errorf("livez %d %q", r.status, r.body)
	}
	if r := f.get("/readyz"); r.status != 200 || !r.contains(`"ready": true`) {
		t.Errorf("readyz %d %s", r.status, r.body)
	}
	if r := f.get("/v1/agents/a/tools"); r.status != 200 || !r.contains(`"name":"echo"`) {
		t.Errorf("tools %d %s", r.status, r.body)
	}
	if r := f.post("/v1/agents/a/tools/echo", `{"text":"hi"}`); r.status != 200 || r.contains(`"isError":true`) {
		t.Errorf("echo %d %s", r.status, r.body)
	}
	if r := f.post("/v1/agents/u/tools/serve_echo", `{"text":"hi"}`); r.status != 200 || !r.contains(`"text":"hi"`) {
		t.Errorf("use case %d %s", r.status, r.body)
	}
	// add is denied to a caller without the sre role whatever its
	// arguments: it is neither listed to them nor known.
	if r := f.get("/v1/agents/a/tools"); r.status != 200 || r.contains(`"name":"add"`) {
		t.Errorf("tools without role %d %s", r.status, r.body)
	}
	r := f.post("/v1/agents/a/tools/add", `{"a":1,"b":2}`)
	if got := codes(t, r); r.status != 200 || fmt.Sprint(got) != "[TOOL_UNKNOWN]" {
		t.Errorf("add without role %d %s", r.status, r.body)
	}
	r = f.post("/v1/agents/a/tools/echo", `{"text":"forbidden"}`)
	if got := codes(t, r); r.status != 200 || fmt.Sprint(got) != "[TOOL_DENIED]" {
		t.Errorf("echo of a denied text %d %s", r.status, r.body)
	}
	req := f.request("GET", "/v1/agents/a/tools", "")
	req.Header.Set("X-Heddle-Subject", "alice")
	req.Header.Set("X-Heddle-Roles", "dev, sre")
	if r := f.send(req); r.status != 200 || !r.contains(`"name":"add"`) {
		t.Errorf("tools with role %d %s", r.status, r.body)
	}
	req = f.request("POST", "/v1/agents/a/tools/add", `{"a":1,"b":2}`)
	req.Header.Set("X-Heddle-Subject", "alice")
	req.Header.Set("X-Heddle-Roles", "dev, sre")
	if r := f.send(req); r.status != 200 || r.contains(`"isError":true`) {
		t.Errorf("add with role %d %s", r.status, r.body)
	}
	r = f.get("/metrics")
	for _, want := range []string{
		`heddle_calls_total{agent="a",code="ok",server="srv",source="mcp"} 2`,
		`heddle_calls_total{agent="a",code="TOOL_DENIED",server="srv",source="mcp"} 1`,
		`heddle_calls_total{agent="a",code="TOOL_UNKNOWN",server="srv",source="mcp"} 1`,
		`heddle_dependency_up{kind="mcp",name="srv",required="true"} 1`,
		`heddle_call_duration_seconds_count{agent="a",server="srv",source="mcp"} 4`,
	} {
		if r.status != 200 || !r.contains(want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if r.contains(`"hi"`) {
		t.Error("metrics carry an argument value")
	}
	// Text comes back as the tool wrote it, isError present though false.
	if r := f.post("/v1/agents/a/tools/echo", `{"text":"<a & b>"}`); r.status != 200 || !r.contains(`"text":"<a & b>"`) || !r.contains(`"isError":false`) {
		t.Errorf("echo of <a & b>: %d %s", r.status, r.body)
	}
}

// TestAgents: GET /v1/agents lists every agent, sorted, with its
// description and the number of tools it offers.
func TestAgents(t *testing.T) {
	f := startTestFront(t)
	r := f.get("/v1/agents")
	var got []struct {
		Name, Description string
		Tools             int
	}
	if err := json.Unmarshal(r.body, &got); r.status != 200 || err != nil {
		t.Fatalf("%d %v %s", r.status, err, r.body)
	}
	tools := map[string]int{}
	for _, agent := range []string{"a", "u"} {
		var list []any
		_ = json.Unmarshal(f.get("/v1/agents/"+agent+"/tools").body, &list)
		tools[agent] = len(list)
	}
	want := fmt.Sprintf("[{a Tools of the test server. %d} {u  2}]", tools["a"])
	if fmt.Sprint(got) != want || tools["a"] == 0 {
		t.Errorf("agents %v, want %s", got, want)
	}
}

// TestInvokeAPIErrorsCoded: every error of the front door is JSON with a
// code and its status — a body that is not an object, too large or not
// JSON by its Content-Type, an unknown agent (listing and calling), a
// method a path does not answer, a path it does not serve, a foreign Host,
// a cross-site request — and so is every refusal (an unknown tool, a
// denied one, arguments against the schema).
func TestInvokeAPIErrorsCoded(t *testing.T) {
	f := startTestFront(t)
	big := `{"text": "` + strings.Repeat("x", config.DefaultServeMaxBodyBytes) + `"}`
	tests := []struct {
		name, method, path, body string
		header                   map[string]string
		chunked                  bool
		status                   int
		want                     diag.Code
	}{
		{name: "a body that is not an object", method: "POST", path: "/v1/agents/a/tools/echo", body: `[1, 2]`, status: 400, want: diag.RequestInvalid},
		{name: "a body of null", method: "POST", path: "/v1/agents/a/tools/echo", body: `null`, status: 400, want: diag.RequestInvalid},
		{name: "a body that is not JSON", method: "POST", path: "/v1/agents/a/tools/echo", body: `{"text":`, status: 400, want: diag.RequestInvalid},
		{name: "a body too large", method: "POST", path: "/v1/agents/a/tools/echo", body: big, status: 413, want: diag.RequestTooLarge},
		{name: "a body too large, chunked", method: "POST", path: "/v1/agents/a/tools/echo", body: big, chunked: true, status: 413, want: diag.RequestTooLarge},
		{name: "a body of text/plain", method: "POST", path: "/v1/agents/a/tools/echo", body: `{"text":"x"}`, header: map[string]string{"Content-Type": "text/plain"}, status: 415, want: diag.RequestInvalid},
		{name: "a form", method: "POST", path: "/v1/agents/a/tools/echo", body: `text=x`, header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, status: 415, want: diag.RequestInvalid},
		{name: "no Content-Type", method: "POST", path: "/v1/agents/a/tools/echo", body: ``, header: map[string]string{"Content-Type": ""}, status: 415, want: diag.RequestInvalid},
		{name: "an unknown agent, listing", method: "GET", path: "/v1/agents/nobody/tools", status: 404, want: diag.AgentUnknown},
		{name: "an unknown agent, calling", method: "POST", path: "/v1/agents/nobody/tools/echo", body: `{}`, status: 404, want: diag.AgentUnknown},
		{name: "GET of a call", method: "GET", path: "/v1/agents/a/tools/echo", status: 405, want: diag.RequestInvalid},
		{name: "DELETE of the agents", method: "DELETE", path: "/v1/agents", status: 405, want: diag.RequestInvalid},
		{name: "POST of a probe", method: "POST", path: "/livez", body: `{}`, status: 405, want: diag.RequestInvalid},
		{name: "an unknown path", method: "GET", path: "/v1/agent/a/tools", status: 404, want: diag.NotFound},
		{name: "an agent's path without a resource", method: "GET", path: "/v1/agents/a", status: 404, want: diag.NotFound},
		{name: "the root", method: "GET", path: "/", status: 404, want: diag.NotFound},
		{name: "a foreign Host", method: "GET", path: "/v1/agents", header: map[string]string{"Host": "evil.example"}, status: 403, want: diag.Forbidden},
		{name: "a foreign Host, calling", method: "POST", path: "/v1/agents/a/tools/echo", body: `{}`, header: map[string]string{"Host": "evil.example:80"}, status: 403, want: diag.Forbidden},
		{name: "a cross-site browser POST", method: "POST", path: "/v1/agents/a/tools/echo", body: `{}`, header: map[string]string{"Sec-Fetch-Site": "cross-site"}, status: 403, want: diag.Forbidden},
		{name: "a POST from another origin", method: "POST", path: "/v1/agents/a/tools/echo", body: `{}`, header: map[string]string{"Origin": "https://evil.example"}, status: 403, want: diag.Forbidden},
		{name: "a cross-site text/plain POST", method: "POST", path: "/v1/agents/a/tools/echo", body: `{"text":"x"}`, header: map[string]string{"Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, status: 403, want: diag.Forbidden},
		{name: "an unknown tool", method: "POST", path: "/v1/agents/a/tools/no_such_tool", body: `{}`, status: 200, want: diag.ToolUnknown},
		{name: "a tool denied whatever its arguments", method: "POST", path: "/v1/agents/a/tools/big", body: `{}`, status: 200, want: diag.ToolUnknown},
		{name: "a denied call", method: "POST", path: "/v1/agents/a/tools/echo", body: `{"text":"forbidden"}`, status: 200, want: diag.ToolDenied},
		{name: "arguments against the schema", method: "POST", path: "/v1/agents/a/tools/echo", body: `{"text": 5}`, status: 200, want: diag.ToolArgsInvalid},
		{name: "a call past tool_timeout_ms", method: "POST", path: "/v1/agents/u/tools/serve_hold", body: `{}`, status: 504, want: diag.ToolTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := f.request(tc.method, tc.path, tc.body)
			if tc.chunked {
				req.Body, req.ContentLength = struct{ io.ReadCloser }{req.Body}, -1
			}
			for k, v := range tc.header {
				if k == "Host" {
					req.Host = v
					continue
				}
				req.Header.Set(k, v)
			}
			r := f.send(req)
			got := codes(t, r)
			if r.status != tc.status || !slices.Contains(got, tc.want) {
				t.Errorf("status %d, codes %v; want %d %s\n%s", r.status, got, tc.status, tc.want, r.body)
			}
			if r.status == 405 && r.header.Get("Allow") == "" {
				t.Error("a 405 without Allow")
			}
		})
	}
	// Nothing those requests held is left: the calls of the use case ended
	// with their deadline.
	for len(holdStarted) > 0 {
		<-holdStarted
	}
}

// TestUnauthenticatedAndForbidden: without serve.auth every /v1/ request
// is 401 with WWW-Authenticate; under trusted_headers, a request from an
// address that is not a proxy is 403 when it carries identity headers and
// 401 when it does not; the probes answer all of them.
func TestUnauthenticatedAndForbidden(t *testing.T) {
	for _, tc := range []struct {
		name, serve string
		subject     string // X-Heddle-Subject sent, if any
		status      int
		want        diag.Code
	}{
		{"no serve.auth", "", "", 401, diag.Unauthenticated},
		{"identity headers from elsewhere", "serve:\n  auth: {kind: trusted_headers, proxies: [10.0.0.0/8]}\n", "alice", 403, diag.Forbidden},
		{"no identity headers from elsewhere", "serve:\n  auth: {kind: trusted_headers, proxies: [10.0.0.0/8]}\n", "", 401, diag.Unauthenticated},
		{"metrics need a caller", "serve:\n  auth: {kind: trusted_headers, proxies: [10.0.0.0/8], metrics: true}\n", "alice", 403, diag.Forbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFront(t, tc.serve+inMemoryServer, testAgents)
			send := func(method, path, body string) *response {
				req := f.request(method, path, body)
				if tc.subject != "" {
					req.Header.Set("X-Heddle-Subject", tc.subject)
				}
				return f.send(req)
			}
			paths := []string{"/v1/agents", "/v1/agents/a/tools", "/v1/openapi.json"}
			if strings.Contains(tc.serve, "metrics: true") {
				paths = []string{"/metrics"}
			} else if r := f.get("/metrics"); r.status != 200 {
				t.Errorf("metrics %d", r.status)
			}
			for _, path := range paths {
				r := send("GET", path, "")
				if got := codes(t, r); r.status != tc.status || !slices.Contains(got, tc.want) {
					t.Errorf("%s: %d %v, want %d %s", path, r.status, got, tc.status, tc.want)
				}
				if tc.status == 401 && r.header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s: 401 without WWW-Authenticate", path)
				}
			}
			if r := send("POST", "/v1/agents/a/tools/echo", `{"text":"x"}`); r.status != tc.status && !strings.Contains(tc.serve, "metrics") {
				t.Errorf("call %d, want %d", r.status, tc.status)
			}
			for _, probe := range []string{"/livez", "/readyz"} {
				if r := f.get(probe); r.status != 200 {
					t.Errorf("%s %d", probe, r.status)
				}
			}
		})
	}
}

// TestNamesEchoedBounded: an agent name, a tool name or an argument the
// caller sent comes back at most diag.EchoLimit characters long, however
// long it was.
func TestNamesEchoedBounded(t *testing.T) {
	f := startTestFront(t)
	long := strings.Repeat("n", 10_000)
	asSRE := func(path, body string) *response {
		req := f.request("POST", path, body)
		req.Header.Set("X-Heddle-Roles", "sre")
		return f.send(req)
	}
	for _, r := range []*response{
		f.get("/v1/agents/" + long + "/tools"),
		f.post("/v1/agents/"+long+"/tools/echo", `{}`),
		f.post("/v1/agents/a/tools/"+long, `{}`),
		f.post("/v1/agents/a/tools/srv__"+long, `{}`),
		f.post("/v1/agents/a/tools/srv."+long, `{}`),
		asSRE("/v1/agents/a/tools/add", `{"a": "`+long+`", "b": 1}`),
		f.post("/v1/agents/a/tools/echo", `{"text": 1, "`+long+`": 2}`),
		f.get("/v1/" + long),
	} {
		if len(codes(t, r)) == 0 || r.contains(strings.Repeat("n", diag.EchoLimit+1)) {
			t.Errorf("%s %.80s…: %d bytes, repeating more than %d characters of the name: %.300s", r.req.Method, r.req.URL.Path, len(r.body), diag.EchoLimit, r.body)
		}
	}
}

// TestShuttingDown: once the runtime is closed, listings and calls are 503
// SHUTTING_DOWN and /readyz says not ready, while /livez still answers.
func TestShuttingDown(t *testing.T) {
	f := startTestFront(t)
	if err := f.rt.Close(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*response{f.get("/v1/agents"), f.get("/v1/agents/a/tools"), f.post("/v1/agents/a/tools/echo", `{}`)} {
		if got := codes(t, r); r.status != 503 || !slices.Equal(got, []diag.Code{diag.ShuttingDown}) {
			t.Errorf("%s %s: %d %v, want 503 SHUTTING_DOWN", r.req.Method, r.req.URL.Path, r.status, got)
		}
	}
	if r := f.get("/readyz"); r.status != 503 {
		t.Errorf("readyz %d", r.status)
	}
	if r := f.get("/livez"); r.status != 200 {
		t.Errorf("livez %d", r.status)
	}
}
