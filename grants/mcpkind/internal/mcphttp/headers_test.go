package mcphttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/internal/testmcp"
)

// TestParamHeaders: at 2026-07-28 a call of a tool whose input schema marks
// arguments with x-mcp-header carries them in Mcp-Param-* headers, encoded
// as the revision says, and go-sdk's server, which checks them against the
// body, accepts the call; a schema that breaks the rules gets none.
func TestParamHeaders(t *testing.T) {
	schema := `route={"inputSchema":{"type":"object","properties":{` +
		`"region":{"type":"string","x-mcp-header":"Region"},` +
		`"n":{"type":"integer","x-mcp-header":"N"},` +
		`"dry":{"type":"boolean","x-mcp-header":"Dry"},` +
		`"where":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}}}}}`
	ts := httptest.NewServer(testmcp.Handler(&testmcp.Options{Stateless: true, Tools: []string{"route"}, Define: []string{schema}}))
	defer ts.Close()
	var mu sync.Mutex
	var got http.Header
	rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Header.Get(hdrMethod) == "tools/call" {
			mu.Lock()
			got = req.Header.Clone()
			mu.Unlock()
		}
		return http.DefaultTransport.RoundTrip(req)
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		NewTransport(Options{Endpoint: ts.URL + testmcp.StreamablePath, Client: &http.Client{Transport: rt}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "route", Arguments: map[string]any{
		"region": "zürich", "n": 3, "dry": true, "where": map[string]any{"zone": "b"},
	}})
	if err != nil || res.IsError {
		t.Fatalf("route: %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for h, want := range map[string]string{
		"Mcp-Param-Region": "=?base64?esO8cmljaA==?=",
		"Mcp-Param-N":      "3",
		"Mcp-Param-Dry":    "true",
		"Mcp-Param-Zone":   "b",
		"Mcp-Name":         "route",
	} {
		if v := got.Get(h); v != want {
			t.Errorf("%s: %q, want %q", h, v, want)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestParamTables: which tools get bindings, and the header form of each
// kind of value.
func TestParamTables(t *testing.T) {
	var p paramTables
	p.record([]byte(`{"tools":[
		{"name":"ok","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"}}}},
		{"name":"number","inputSchema":{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}},
		{"name":"twice","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}},
		{"name":"badname","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A B"}}}},
		{"name":"plain","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}]}`))
	if len(p["ok"]) != 1 {
		t.Errorf("ok: %+v", p["ok"])
	}
	for _, tool := range []string{"number", "twice", "badname", "plain"} {
		if len(p[tool]) != 0 {
			t.Errorf("%s has bindings %+v", tool, p[tool])
		}
	}
	for raw, want := range map[string]string{
		`"plain"`: "plain", `" pad"`: "=?base64?IHBhZA==?=", `"=?base64?x?="`: "=?base64?PT9iYXNlNjQ/eD89?=",
		`false`: "false", `-42`: "-42", `9007199254740991`: "9007199254740991",
	} {
		if v, ok := headerValue([]byte(raw)); !ok || v != want {
			t.Errorf("%s: %q, %v; want %q", raw, v, ok, want)
		}
	}
	for _, raw := range []string{`null`, `1.5`, `9007199254740992`, `[1]`, `{}`} {
		if v, ok := headerValue([]byte(raw)); ok {
			t.Errorf("%s has a header value %q", raw, v)
		}
	}
}
