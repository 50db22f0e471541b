package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
)

// The sizes of TestResultTooLarge: a server's max_result_bytes, its hard
// limit (four times as much), and a result far over both.
const (
	boundsMax   = 1 << 20
	boundsHard  = 4 * boundsMax
	boundsHuge  = 64 << 20
	boundsUnder = boundsHard - 256<<10 // cut, not refused
)

// boundsServers are the transports an oversized result can arrive by: a
// stdio child, Streamable HTTP answering with event streams and with JSON
// bodies, and legacy SSE, each a heddle-testmcp process of its own.
var boundsServers = []struct {
	name string
	args []string // heddle-testmcp flags; nil for stdio
	spec string   // the server's settings, %s for the HTTP server's URL
}{
	{"stdio", nil, `{transport: stdio, command: $TESTMCP, max_result_bytes: %d}`},
	{"http", []string{}, `{url: "%s/mcp", max_result_bytes: %d}`},
	{"http-json", []string{"--json-response"}, `{url: "%s/mcp", max_result_bytes: %d}`},
	{"sse", []string{}, `{transport: sse, url: "%s/sse", max_result_bytes: %d}`},
}

// openBounds opens a runtime whose one server, s, is reached over the
// transport named, and returns agent x's toolset and the runtime's log.
func openBounds(t *testing.T, name string) (*runtime.Toolset, *logCapture) {
	t.Helper()
	for _, srv := range boundsServers {
		if srv.name != name {
			continue
		}
		spec := fmt.Sprintf(srv.spec, boundsMax)
		if srv.args != nil {
			spec = fmt.Sprintf(srv.spec, startHTTPServer(t, 0, srv.args...).URL(), boundsMax)
		}
		logs := newLogCapture()
		rt := openWith(t, `
ai:
  startup_timeout_ms: 10000
  mcp_servers:
    s: `+spec+`
`, map[string]string{"x": `capabilities: [{kind: mcp, server: s}]`}, runtime.Options{Logger: slog.New(logs)})
		return toolsetOf(t, rt, "x"), logs
	}
	t.Fatalf("no transport %q", name)
	return nil, nil
}

// TestResultTooLarge: over every transport, a 64 MiB result to a server
// whose max_result_bytes is 1 MiB is refused RESULT_TOO_LARGE having taken
// less than 8 MiB of memory (and 4 MiB more for whatever else runs), while a
// call in flight on the same session meanwhile succeeds, and so does the
// next; the session is never lost, and a stdio server is the same process
// afterwards (the tool is read-only, which must not make heddle send it
// again). A result just under the hard limit is cut, as a result over
// max_result_bytes always was. The memory each call took is logged.
//
// It runs its transports one after another, never in parallel with other
// tests, so that the memory it measures is the call's.
func TestResultTooLarge(t *testing.T) {
	for _, srv := range boundsServers {
		t.Run(srv.name, func(t *testing.T) {
			ts, logs := openBounds(t, srv.name)
			pid := intField(t, mustCall(t, ts, "pid", nil), "pid")

			// A call in flight on the same session while the result comes
			// and is refused (it takes the server a few seconds to send).
			var wg sync.WaitGroup
			concurrent := make(chan error, 1)
			var concurrentEnd time.Time
			wg.Go(func() {
				res, err := ts.Call(context.Background(), "sleep", map[string]any{"ms": 4000})
				concurrentEnd = time.Now()
				if err == nil && res.IsError {
					err = fmt.Errorf("refused: %s", text(res))
				}
				concurrent <- err
			})
			var res *callResult
			start := time.Now()
			use := memDuring(func() { res = callTool(ts, "big", map[string]any{"bytes": boundsHuge}) })
			took := time.Since(start)
			wg.Wait()
			t.Logf("%s: a %d MiB result: %s; refused in %v, the call alongside answered %v later",
				srv.name, boundsHuge>>20, use, took.Round(time.Millisecond), concurrentEnd.Sub(start.Add(took)).Round(time.Millisecond))
			if res.err != nil {
				t.Fatalf("big: %v", res.err)
			}
			if got := runtime.RefusalCode(res.res); got != diag.ResultTooLarge || !res.res.IsError {
				t.Fatalf("big: code %q (isError %v, %.200q), want %s", got, res.res.IsError, text(res.res), diag.ResultTooLarge)
			}
			if !strings.Contains(text(res.res), fmt.Sprint(boundsHard)) {
				t.Errorf("the refusal does not give the hard limit: %q", text(res.res))
			}
			if err := <-concurrent; err != nil {
				t.Errorf("a call made at the same time failed: %v", err)
			}
			if use.allocated > 8*boundsMax+4<<20 {
				t.Errorf("refusing the result allocated %d MiB, want less than 8 MiB plus 4 MiB", use.allocated>>20)
			}
			if got := text(mustCall(t, ts, "echo", map[string]any{"text": "after"})); got != "after" {
				t.Errorf("the next call answered %q", got)
			}
			if got := intField(t, mustCall(t, ts, "pid", nil), "pid"); got != pid {
				t.Errorf("the server is process %d after the call, %d before", got, pid)
			}
			for _, r := range logs.Records() {
				if r.Msg == "server connection lost" || r.Msg == "server reconnected" {
					t.Errorf("logged %q: the session did not survive", r.Msg)
				}
			}

			under := memDuring(func() { res = callTool(ts, "big", map[string]any{"bytes": boundsUnder}) })
			t.Logf("%s: a %.2f MiB result: %s", srv.name, float64(boundsUnder)/(1<<20), under)
			if res.err != nil || res.res.IsError {
				t.Fatalf("big %d: err %v, refusal %q", boundsUnder, res.err, runtime.RefusalCode(res.res))
			}
			// Most of it is go-sdk's reading and decoding; the bound is there
			// to catch a result read without bounds (822 MB for 64 MiB).
			if under.allocated > 20*boundsHard {
				t.Errorf("a result under the hard limit allocated %d MiB, want less than 20 times the limit", under.allocated>>20)
			}
			if len(res.res.Content) < 2 || !strings.Contains(text(res.res), "was cut") {
				t.Errorf("a result under the hard limit was not cut with a note")
			}
		})
	}
}

// callResult is what one Toolset.Call returned.
type callResult struct {
	res *mcp.CallToolResult
	err error
}

func callTool(ts *runtime.Toolset, name string, args map[string]any) *callResult {
	res, err := ts.Call(context.Background(), name, args)
	return &callResult{res, err}
}

// memUse is what memDuring measured.
type memUse struct {
	allocated uint64 // bytes allocated while f ran, by every goroutine
	peak      uint64 // the highest heap seen above the heap before f
}

func (m memUse) String() string {
	return fmt.Sprintf("%.1f MiB allocated, heap peak %.1f MiB above the start", float64(m.allocated)/(1<<20), float64(m.peak)/(1<<20))
}

// memDuring runs f after a collection, and measures the bytes allocated
// meanwhile and the peak of the heap (live and not yet freed objects),
// sampled every 200 µs, above what it was when f started.
func memDuring(f func()) memUse {
	samples := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	debug.FreeOSMemory()
	metrics.Read(samples)
	alloc0, base := samples[0].Value.Uint64(), samples[1].Value.Uint64()
	stop, peak := make(chan struct{}), make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		highest := base
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			highest = max(highest, s[0].Value.Uint64())
			select {
			case <-stop:
				peak <- highest
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	highest := <-peak
	metrics.Read(samples)
	return memUse{allocated: samples[0].Value.Uint64() - alloc0, peak: max(highest, samples[1].Value.Uint64()) - base}
}
