package mcplive

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/grants/mcpkind/internal/mcphttp"
	"github.com/heddlehq/heddle/internal/testmcp"
)

// TestDirectCallCancelled: a call heddle makes on its connection and gives
// up on is cancelled at the server (notifications/cancelled), so the hung
// handler ends and the session closes at once, at both revisions.
func TestDirectCallCancelled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    testmcp.Options
		version string
	}{
		{"2025-11-25", testmcp.Options{HangOnCall: []string{"echo"}}, "2025-11-25"},
		{"2026-07-28", testmcp.Options{HangOnCall: []string{"echo"}, Stateless: true}, "2026-07-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(testmcp.Handler(&tc.opts))
			defer ts.Close()
			wt := &wireTransport{Transport: mcphttp.NewTransport(mcphttp.Options{Endpoint: ts.URL + testmcp.StreamablePath}), hints: new(wireHints)}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(), wt, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.ListTools(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			newProtocol := tc.version == "2026-07-28"
			if !wt.conn.calls.ready(newProtocol) {
				t.Fatal("the connection cannot make calls")
			}
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			_, err = wt.conn.callTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}, newProtocol)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the hung call: %v, want its deadline", err)
			}
			time.Sleep(200 * time.Millisecond) // the cancellation is sent off the caller's path
			start := time.Now()
			_ = cs.Close()
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Close took %v: the server still held the call", d)
			}
		})
	}
}
