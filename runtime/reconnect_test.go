package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCrashMidCallNotResent: the server process dies on a call to a tool
// that is not read-only. The call answers TOOL_UNAVAILABLE and is not
// re-sent; the supervisor starts a new process and the next call works. A
// read-only tool's call that breaks the same way is re-sent once.
//
// With --crash-after 1 every server process answers one call and dies on
// the second, so the outcome of the first call to a fresh process tells
// whether anything was re-sent to it.
func TestCrashMidCallNotResent(t *testing.T) {
	t.Parallel()
	rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a:
      transport: stdio
      command: $TESTMCP
      args: [--crash-after, "1", --destructive, add_tool]
`, map[string]string{"x": `
capabilities: [{kind: mcp, server: a}]
policies: {approval: allow}
`}, runtime.Options{})
	ts := toolsetOf(t, rt, "x")
	pid1 := intField(t, mustCall(t, ts, "pid", nil), "pid") // call 1 of process 1

	// Call 2 of process 1 kills it: add_tool is destructive, so the broken
	// call is reported, not repeated.
	wantRefusal(t, ts, "add_tool", map[string]any{"name": "first"}, diag.ToolUnavailable)
	waitGone(t, 5*time.Second, pid1)

	// Once the supervisor has a new process, its first call succeeds: had
	// the broken call been re-sent to it, that would have been its first
	// call and this one would have crashed it.
	eventually(t, 10*time.Second, "reconnected", func() bool { return len(rt.Unavailable()) == 0 })
	res := mustCall(t, ts, "add_tool", map[string]any{"name": "second"}) // call 1 of process 2
	if text(res) != "added second" {
		t.Fatalf("add_tool = %q", text(res))
	}
	// list_changed reaches the client shortly after the call's answer.
	eventually(t, 5*time.Second, "second listed", func() bool { return slices.Contains(toolNames(t, ts), "second") })
	if names := toolNames(t, ts); slices.Contains(names, "first") {
		t.Fatalf("tools = %v: the broken add_tool call was re-sent", names)
	}

	// Call 2 of process 2 kills it; pid is read-only, so the call is re-sent
	// to process 3 and answers from there.
	res, err := ts.Call(context.Background(), "pid", nil)
	if err != nil || res.IsError {
		t.Fatalf("read-only call across a crash: %v %v (%s)", res, err, runtime.RefusalCode(res))
	}
	pid3 := intField(t, res, "pid")
	if pid3 == pid1 {
		t.Fatalf("pid %d answered after it crashed", pid3)
	}
	// And again: process 3 dies on its second call, which process 4 answers.
	res, err = ts.Call(context.Background(), "pid", nil)
	if err != nil || res.IsError {
		t.Fatalf("second read-only call: %v %v", res, err)
	}
	if pid4 := intField(t, res, "pid"); pid4 == pid3 {
		t.Fatalf("process %d answered two calls with --crash-after 1", pid3)
	}
}

// TestHTTPServerRestart kills the server behind a Streamable HTTP or SSE
// client and starts a new process on the same port. The runtime gets a new
// session (Streamable HTTP answers the old one with 404; SSE has no
// resumption, so the supervisor reconnects) and calls work again; at most
// one call in between answers TOOL_UNAVAILABLE.
func TestHTTPServerRestart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ transport, path string }{
		{"http", "/mcp"},
		{"sse", "/sse"},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			t.Parallel()
			srv := startHTTPServer(t, 0)
			rt := openWith(t, fmt.Sprintf(`
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    h: {transport: %s, url: "%s%s", timeout_ms: 5000}
`, tc.transport, srv.URL(), tc.path), map[string]string{"x": `capabilities: [{kind: mcp, server: h}]`}, runtime.Options{})
			ts := toolsetOf(t, rt, "x")
			pid1 := intField(t, mustCall(t, ts, "pid", nil), "pid")

			srv.restart()

			unavailable := 0
			var res *mcp.CallToolResult
			for try := 0; ; try++ {
				eventually(t, 10*time.Second, "server ready", func() bool { return len(rt.Unavailable()) == 0 })
				var err error
				res, err = ts.Call(context.Background(), "pid", nil)
				if err != nil {
					t.Fatalf("call after restart: %v", err)
				}
				if runtime.RefusalCode(res) != diag.ToolUnavailable {
					break
				}
				if unavailable++; unavailable > 1 {
					t.Fatalf("%d calls answered TOOL_UNAVAILABLE after the restart", unavailable)
				}
			}
			if res.IsError {
				t.Fatalf("call after restart: code %q %s", runtime.RefusalCode(res), text(res))
			}
			t.Logf("TOOL_UNAVAILABLE answers after the restart: %d", unavailable)
			if pid2 := intField(t, res, "pid"); pid2 == pid1 {
				t.Fatalf("answered by the killed process %d", pid1)
			}
			mustCall(t, ts, "echo", map[string]any{"text": "again"})
		})
	}
}
