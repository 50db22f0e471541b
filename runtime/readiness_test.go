package runtime_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// TestReadinessFollowsHTTPServer kills the Streamable HTTP server (a
// heddle-testmcp process) behind a required dependency, and starts it
// again on the same address. Health turns not ready within a second of
// the first call that fails — and, with no call at all, once the transport
// finds its event stream cannot be re-opened. When the server is back, the
// first call made within a second of its return succeeds. The agent's
// other server answers throughout.
func TestReadinessFollowsHTTPServer(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"call", "idle"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv := startHTTPServer(t, 0)
			rt := openWith(t, fmt.Sprintf(`
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    good: {transport: stdio, command: $TESTMCP}
    bad: {transport: http, url: "%s/mcp", timeout_ms: 5000}
`, srv.URL()), siblings, runtime.Options{})
			ts := toolsetOf(t, rt, "x")
			mustCall(t, ts, "bad__echo", map[string]any{"text": "before"})
			if !rt.Health().Ready {
				t.Fatal("not ready before the kill")
			}

			srv.kill()
			killed := time.Now()
			var failed time.Time
			if mode == "call" {
				if code := coded(t, ts, "bad__echo"); code != diag.ToolUnavailable {
					t.Fatalf("bad__echo after the kill: code %q, want %s", code, diag.ToolUnavailable)
				}
				failed = time.Now()
				t.Logf("the first call after the kill answered in %v", failed.Sub(killed))
			}
			for rt.Health().Ready {
				if mode == "call" && time.Since(failed) > time.Second {
					t.Fatal("still ready a second after a call failed")
				}
				if time.Since(killed) > 10*time.Second {
					t.Fatal("still ready 10 s after the kill, with no call")
				}
				time.Sleep(time.Millisecond)
			}
			if mode == "call" {
				t.Logf("not ready %v after the failed call", time.Since(failed))
			} else {
				t.Logf("not ready %v after the kill, with no call", time.Since(killed))
			}
			if d := dependency(t, rt, "bad"); d.State != driver.StateDown || d.Since == nil {
				t.Errorf("bad in the report: %+v, want down with a since", d)
			}
			mustCall(t, ts, "good__echo", map[string]any{"text": "during"})

			// Away for a while: the supervisor's backoff grows meanwhile.
			time.Sleep(2 * time.Second)
			srv.start()
			back := time.Now()
			mustCall(t, ts, "bad__echo", map[string]any{"text": "back"})
			t.Logf("the first call once the server was back succeeded %v after its return", time.Since(back))
			if d := time.Since(back); d > time.Second {
				t.Errorf("the first call once the server was back took %v", d)
			}
			if !rt.Health().Ready {
				t.Error("not ready once a call succeeded")
			}
			mustCall(t, ts, "good__echo", map[string]any{"text": "after"})
		})
	}
}
