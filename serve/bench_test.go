package serve_test

// The load test of the invoke API: calls through the front door over HTTP
// on 127.0.0.1, with serve.auth on (trusted_headers, the proxy being this
// machine), measured in the same run against the same calls made in
// process through the toolset (runtime.Toolset.Call), and through a
// minimal hand-written front door (net/http, the body decoded, the same
// toolset called, its result encoded: no checks, no limits) on the same
// loopback with the same client, so that the ratios mean something
// whatever the machine. docs/performance.md records a run; `make bench
// BENCH=Invoke` runs them.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/serve"
)

// benchTools are the fast tools the load test calls: a use case that
// answers its argument, and the test MCP server's echo over an in-memory
// transport.
var benchTools = []struct{ name, agent, tool string }{
	{"usecase", "u", "serve_echo"},
	{"mcp", "a", "echo"},
}

// benchBody is the body of every call: the arguments of both tools.
const benchBody = `{"text": "hello, heddle"}`

// benchCaller is who the calls are made as.
var benchCaller = heddle.Identity{Subject: "bench", Roles: []string{"dev"}}

// benchSides returns the ways of making one call of tool: through the
// front door (http), through the minimal one (minimal), and through the
// toolset (inprocess).
func benchSides(b *testing.B, f *front, minimal, agent, tool string) map[string]func() error {
	ts, err := f.rt.Toolset(agent)
	if err != nil {
		b.Fatal(err)
	}
	ctx := heddle.WithCaller(context.Background(), benchCaller)
	args := map[string]any{"text": "hello, heddle"}
	want := []byte(`"isError":false`)
	post := func(url string) error {
		req, err := http.NewRequest("POST", url, bytes.NewReader([]byte(benchBody)))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Heddle-Subject", benchCaller.Subject)
		req.Header.Set("X-Heddle-Roles", "dev")
		res, err := f.client.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 || !bytes.Contains(body, want) {
			return fmt.Errorf("%d %v %s", res.StatusCode, err, body)
		}
		return nil
	}
	return map[string]func() error{
		"http":    func() error { return post(f.url + "/v1/agents/" + agent + "/tools/" + tool) },
		"minimal": func() error { return post(minimal + "/" + agent + "/" + tool) },
		"inprocess": func() error {
			res, err := ts.Call(ctx, tool, args)
			if err != nil || res.IsError {
				return fmt.Errorf("%v %+v", err, res)
			}
			return nil
		},
	}
}

// startBenchFront is the front door the load test calls, with idle
// connections enough for every caller, and the URL of the minimal front
// door of the same runtime.
func startBenchFront(b *testing.B) (*front, string) {
	f := startFront(b, trustLoopback+inMemoryServer, testAgents)
	f.client.Transport.(*http.Transport).MaxIdleConnsPerHost = 128
	minimal := startMinimal(b, f.rt)
	for _, bt := range benchTools {
		for range 20 { // warm up: schemas, connections, first-use paths
			for _, call := range benchSides(b, f, minimal, bt.agent, bt.tool) {
				if err := call(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return f, minimal
}

// startMinimal serves POST /{agent}/{tool} on 127.0.0.1 as a careful
// hand-written front door with nothing of heddle's would: the caller from
// the identity headers, the body decoded, the toolset called, the result
// encoded. It returns its URL; it is closed when the benchmark ends.
func startMinimal(b *testing.B, rt *runtime.Runtime) string {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /{agent}/{tool}", func(w http.ResponseWriter, r *http.Request) {
		ts, err := rt.Toolset(r.PathValue("agent"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		var args map[string]any
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id := heddle.Identity{Subject: r.Header.Get("X-Heddle-Subject"), Roles: strings.Split(r.Header.Get("X-Heddle-Roles"), ",")}
		res, err := ts.Call(heddle.WithCaller(r.Context(), id), r.PathValue("tool"), args)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(serve.Result(res))
	})
	srv := httptest.NewServer(mux)
	b.Cleanup(srv.Close)
	return srv.URL
}

// BenchmarkInvoke makes b.N calls of each fast tool with 1 and with 64
// callers at once, through the front door (http) and in process, and
// reports the throughput (calls/s) and the median and 99th percentile of
// one call (p50-µs, p99-µs).
func BenchmarkInvoke(b *testing.B) {
	f, minimal := startBenchFront(b)
	for _, bt := range benchTools {
		sides := benchSides(b, f, minimal, bt.agent, bt.tool)
		for _, callers := range []int{1, 64} {
			for _, side := range []string{"http", "minimal", "inprocess"} {
				b.Run(fmt.Sprintf("%s/callers=%d/%s", bt.name, callers, side), func(b *testing.B) {
					load(b, callers, sides[side])
				})
			}
		}
	}
}

// load makes b.N calls with callers goroutines and reports the metrics.
func load(b *testing.B, callers int, call func() error) {
	var (
		next atomic.Int64
		mu   sync.Mutex
		all  = make([]time.Duration, 0, b.N)
		wg   sync.WaitGroup
	)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range callers {
		wg.Go(func() {
			var ds []time.Duration
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := call(); err != nil {
					b.Error(err)
					return
				}
				ds = append(ds, time.Since(t0))
			}
			mu.Lock()
			all = append(all, ds...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(percentile(all, 50)/1e3, "p50-µs")
	b.ReportMetric(percentile(all, 99)/1e3, "p99-µs")
}

// percentile returns the p-th percentile of ds in nanoseconds. It sorts ds.
func percentile(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[min(len(ds)-1, len(ds)*p/100)])
}

// BenchmarkInvokeOverhead interleaves, one caller at a time, a call
// through the front door, one through the minimal front door and one in
// process, in an order drawn at random for each round, so that the
// machine's drift affects all three alike. It reports the three medians,
// what the front door adds to the median call made in process
// (added-p50-µs), and what it adds over the minimal front door
// (over-minimal-p50-µs).
func BenchmarkInvokeOverhead(b *testing.B) {
	f, minimal := startBenchFront(b)
	names := []string{"http", "minimal", "inprocess"}
	for _, bt := range benchTools {
		sides := benchSides(b, f, minimal, bt.agent, bt.tool)
		b.Run(bt.name, func(b *testing.B) {
			ds := map[string][]time.Duration{}
			order := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				round := slices.Clone(names)
				order.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
				for _, side := range round {
					t0 := time.Now()
					if err := sides[side](); err != nil {
						b.Fatal(err)
					}
					ds[side] = append(ds[side], time.Since(t0))
				}
			}
			b.StopTimer()
			h, m, p := percentile(ds["http"], 50), percentile(ds["minimal"], 50), percentile(ds["inprocess"], 50)
			b.ReportMetric(h/1e3, "http-p50-µs")
			b.ReportMetric(m/1e3, "minimal-p50-µs")
			b.ReportMetric(p/1e3, "inprocess-p50-µs")
			b.ReportMetric((h-p)/1e3, "added-p50-µs")
			b.ReportMetric((h-m)/1e3, "over-minimal-p50-µs")
		})
	}
}
