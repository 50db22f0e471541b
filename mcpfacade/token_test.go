package mcpfacade_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/mcpfacade"
	"github.com/heddlehq/heddle/runtime"
)

// tokenSeen is a toolset of one tool, whoami, that records the caller's
// token each call carries.
type tokenSeen struct {
	mu   sync.Mutex
	seen []string
}

func (ts *tokenSeen) Tools(context.Context) ([]runtime.Tool, error) {
	return []runtime.Tool{{Name: "whoami", OriginalName: "whoami", Kind: "mcp", Server: "s", ReadOnly: true,
		InputSchema: map[string]any{"type": "object"}}}, nil
}

func (ts *tokenSeen) Call(ctx context.Context, _ string, _ map[string]any, _ ...runtime.CallOption) (*mcp.CallToolResult, error) {
	tok, _ := heddle.CallerToken(ctx)
	ts.mu.Lock()
	ts.seen = append(ts.seen, tok)
	ts.mu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
}

// TestSessionCallsCarryTheLatestToken: in a session of 2025-11-25 each
// call carries the caller's token its own request presented, not the one
// that opened the session (which may have expired since): what a server
// called as the caller is given exchanges the token the caller holds now.
func TestSessionCallsCarryTheLatestToken(t *testing.T) {
	t.Parallel()
	ts := &tokenSeen{}
	h := mcpfacade.NewHandler(&mcpfacade.HandlerOptions{
		Toolset: func(string) (mcpfacade.Toolset, error) { return ts, nil },
		Agent:   func(*http.Request) string { return "x" },
	})
	// The front door: one caller, whose bearer token is the request's.
	front := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := heddle.WithCaller(r.Context(), heddle.Identity{Subject: "alice"})
		ctx = heddle.WithCallerToken(ctx, r.Header.Get("X-Test-Token"))
		h.ServeHTTP(w, r.WithContext(ctx))
	})
	srv := httptest.NewServer(front)
	t.Cleanup(func() { _ = h.Close(); srv.Close() })

	var token atomic.Value
	token.Store("token-1")
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("X-Test-Token", token.Load().(string))
		return http.DefaultTransport.RoundTrip(r)
	})}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, tok := range []string{"token-1", "token-2", "token-3"} {
		token.Store(tok)
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"}); err != nil || res.IsError {
			t.Fatalf("whoami with %s: %v %v", tok, res, err)
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if want := []string{"token-1", "token-2", "token-3"}; len(ts.seen) != 3 || ts.seen[0] != want[0] || ts.seen[1] != want[1] || ts.seen[2] != want[2] {
		t.Errorf("the calls carried %q, want %q", ts.seen, want)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
