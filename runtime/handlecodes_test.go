package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/runtime"
)

// TestHandleDownServerCodes: application code's direct handle answers one
// code for a server that is down, TOOL_UNAVAILABLE with the reason, whether
// the server never connected or dropped after start-up.
func TestHandleDownServerCodes(t *testing.T) {
	t.Parallel()
	drops := startHTTPServer(t, 0)
	never := freePort(t)
	rt := openWith(t, fmt.Sprintf(`
ai:
  startup_timeout_ms: 3000
  remote_clients: optional
  mcp_servers:
    never: {transport: http, url: "http://127.0.0.1:%d/mcp", timeout_ms: 2000}
    drops: {transport: http, url: "%s/mcp", timeout_ms: 2000}
`, never, drops.URL()), map[string]string{"x": `capabilities: [{kind: mcp, server: never}, {kind: mcp, server: drops}]`}, runtime.Options{})
	drops.kill()

	ctx := context.Background()
	for _, server := range []string{"never", "drops"} {
		h, err := mcplive.NewHandle(rt, server)
		if err != nil {
			t.Fatalf("MCP(%s): %v", server, err)
		}
		check := func(op string, err error) {
			t.Helper()
			if diag.CodeOf(err) != diag.ToolUnavailable {
				t.Errorf("%s of %s: %v, want %s", op, server, err, diag.ToolUnavailable)
			} else if !strings.Contains(err.Error(), "connection refused") {
				t.Errorf("%s of %s: %v, want the reason", op, server, err)
			}
		}
		_, err = h.Call(ctx, "echo", map[string]any{"text": "x"})
		check("Call", err)
		_, err = h.Resources(ctx)
		check("Resources", err)
	}
	// A server never listed has no tools to show; one that dropped keeps
	// the tools it listed.
	h, _ := mcplive.NewHandle(rt, "never")
	_, err := h.Tools(ctx)
	if diag.CodeOf(err) != diag.ToolUnavailable {
		t.Errorf("Tools of never: %v, want %s", err, diag.ToolUnavailable)
	}
}
