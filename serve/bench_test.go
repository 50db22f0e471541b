package serve_test

// The load test of the invoke API: calls through the front door over HTTP
// on 127.0.0.1, with serve.auth on (trusted_headers, the proxy being this
// machine), measured in the same run against the same calls made in
// process through the toolset (runtime.Toolset.Call), so that the ratios
// mean something whatever the machine. docs/performance.md records a run;
// `make bench BENCH=Invoke` runs them.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlehq/heddle"
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

// benchSides returns the two ways of making one call of tool: through the
// front door, and through the toolset.
func benchSides(b *testing.B, f *front, agent, tool string) map[string]func() error {
	ts, err := f.rt.Toolset(agent)
	if err != nil {
		b.Fatal(err)
	}
	url := f.url + "/v1/agents/" + agent + "/tools/" + tool
	ctx := heddle.WithCaller(context.Background(), benchCaller)
	args := map[string]any{"text": "hello, heddle"}
	want := []byte(`"isError":false`)
	return map[string]func() error{
		"http": func() error {
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
		},
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
// connections enough for every caller.
func startBenchFront(b *testing.B) *front {
	f := startFront(b, trustLoopback+inMemoryServer, testAgents)
	f.client.Transport.(*http.Transport).MaxIdleConnsPerHost = 128
	for _, bt := range benchTools {
		for range 20 { // warm up: schemas, connections, first-use paths
			for _, call := range benchSides(b, f, bt.agent, bt.tool) {
				if err := call(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return f
}

// BenchmarkInvoke makes b.N calls of each fast tool with 1 and with 64
// callers at once, through the front door (http) and in process, and
// reports the throughput (calls/s) and the median and 99th percentile of
// one call (p50-µs, p99-µs).
func BenchmarkInvoke(b *testing.B) {
	f := startBenchFront(b)
	for _, bt := range benchTools {
		sides := benchSides(b, f, bt.agent, bt.tool)
		for _, callers := range []int{1, 64} {
			for _, side := range []string{"http", "inprocess"} {
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
// through the front door and one in process, in random order, so that the
// machine's drift affects both alike; it reports both medians and what the
// front door adds to the median call (added-p50-µs).
func BenchmarkInvokeOverhead(b *testing.B) {
	f := startBenchFront(b)
	for _, bt := range benchTools {
		sides := benchSides(b, f, bt.agent, bt.tool)
		b.Run(bt.name, func(b *testing.B) {
			hd := make([]time.Duration, 0, b.N)
			pd := make([]time.Duration, 0, b.N)
			order := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				first, second := sides["http"], sides["inprocess"]
				swap := order.IntN(2) == 1
				if swap {
					first, second = second, first
				}
				t0 := time.Now()
				if err := first(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := second(); err != nil {
					b.Fatal(err)
				}
				fd, sd := t1.Sub(t0), time.Since(t1)
				if swap {
					fd, sd = sd, fd
				}
				hd, pd = append(hd, fd), append(pd, sd)
			}
			b.StopTimer()
			h, p := percentile(hd, 50), percentile(pd, 50)
			b.ReportMetric(h/1e3, "http-p50-µs")
			b.ReportMetric(p/1e3, "inprocess-p50-µs")
			b.ReportMetric((h-p)/1e3, "added-p50-µs")
		})
	}
}
