package runtime_test

// Benchmarks of heddle's call path and start-up, each measured in the same
// run against the raw go-sdk client on the same kind of server, so that the
// ratios are meaningful. docs/performance.md explains them and records a run;
// `make bench` runs them.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
)

// benchTransports are the transports every per-call benchmark runs over:
// http is a server in the benchmark's process; http-proc one in a process of
// its own answering with event streams (go-sdk's default), http-proc-json
// one answering with JSON bodies.
var benchTransports = []string{"inmemory", "stdio", "http", "http-proc", "http-proc-json"}

// benchAgent grants one server, "s", with the default policies.
var benchAgent = map[string]string{"bench": `capabilities: [{kind: mcp, server: s}]`}

// benchPair is a toolset and a raw go-sdk session on the same kind of
// server over the same transport.
type benchPair struct {
	ts      *runtime.Toolset
	raw     *mcp.ClientSession
	control *mcp.ClientSession // a second raw session, the first's equal
	close   func()             // closes everything; also run when the benchmark ends
}

// newRawClient is the raw go-sdk client the benchmarks compare with: no
// handlers, no roots, as a careful hand-written client would be.
func newRawClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "raw-go-sdk", Version: "0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
}

// newBenchPair opens a runtime with one server "s" over transport, and two
// raw sessions to equal servers over the same transport. Everything is closed
// by p.close, or when the benchmark ends.
func newBenchPair(b *testing.B, transport string) *benchPair {
	b.Helper()
	return newTracedBenchPair(b, transport, nil)
}

// newTracedBenchPair is newBenchPair with the runtime's spans made by tp
// (nil: the global provider, a no-op).
func newTracedBenchPair(b *testing.B, transport string, tp trace.TracerProvider) *benchPair {
	b.Helper()
	ctx := context.Background()
	var (
		api     string
		opts    runtime.Options
		rawT    func() mcp.Transport
		cleanup []func()
	)
	var once sync.Once
	closeAll := func() {
		once.Do(func() {
			for _, f := range slices.Backward(cleanup) {
				f()
			}
		})
	}
	b.Cleanup(closeAll)
	switch transport {
	case "inmemory":
		// The URL is never dialled: Dial supplies an in-memory pipe to an
		// in-process server for each connection attempt.
		srv := testmcp.NewServer(nil)
		var (
			mu       sync.Mutex
			sessions []*mcp.ServerSession
		)
		cleanup = append(cleanup, func() {
			mu.Lock()
			defer mu.Unlock()
			for _, ss := range sessions {
				_ = ss.Close()
			}
		})
		connect := func() mcp.Transport {
			st, ct := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st, nil)
			if err != nil {
				b.Fatalf("in-memory server: %v", err)
			}
			mu.Lock()
			sessions = append(sessions, ss)
			mu.Unlock()
			return ct
		}
		api = "ai:\n  mcp_servers:\n    s: {url: http://127.0.0.1:1/mcp}\n"
		opts.Kinds = testkinds.MCP(func(k *mcplive.Kind) { k.Dial = func(string) mcp.Transport { return connect() } })
		rawT = connect
	case "stdio":
		api = "ai:\n  mcp_servers:\n    s: {transport: stdio, command: $TESTMCP}\n"
		rawT = func() mcp.Transport {
			return &mcp.CommandTransport{Command: exec.Command(testmcpBin), TerminateDuration: 2 * time.Second}
		}
	case "http":
		hs := httptest.NewServer(testmcp.Handler(nil))
		cleanup = append(cleanup, hs.Close)
		tr := http.DefaultTransport.(*http.Transport).Clone()
		cleanup = append(cleanup, tr.CloseIdleConnections)
		api = fmt.Sprintf("ai:\n  mcp_servers:\n    s: {url: %s/mcp}\n", hs.URL)
		rawT = func() mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: &http.Client{Transport: tr}, MaxRetries: 3}
		}
	case "http-proc", "http-proc-json":
		var args []string
		if transport == "http-proc-json" {
			args = append(args, "--"+testmcp.FlagJSONResponse)
		}
		srv := startHTTPServer(b, 0, args...)
		tr := http.DefaultTransport.(*http.Transport).Clone()
		cleanup = append(cleanup, tr.CloseIdleConnections)
		api = fmt.Sprintf("ai:\n  mcp_servers:\n    s: {url: %s/mcp}\n", srv.URL())
		rawT = func() mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: srv.URL() + "/mcp", HTTPClient: &http.Client{Transport: tr}, MaxRetries: 3}
		}
	default:
		b.Fatalf("unknown transport %q", transport)
	}
	opts.TracerProvider = tp
	rt, err := runtime.Open(ctx, compilePlan(b, api, benchAgent), opts)
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	cleanup = append(cleanup, func() { _ = rt.Close() })
	ts, err := rt.Toolset("bench")
	if err != nil {
		b.Fatal(err)
	}
	p := &benchPair{ts: ts, close: closeAll}
	for _, sess := range []**mcp.ClientSession{&p.raw, &p.control} {
		*sess, err = newRawClient().Connect(ctx, rawT(), nil)
		if err != nil {
			b.Fatalf("raw connect: %v", err)
		}
		cleanup = append(cleanup, func() { _ = (*sess).Close() })
	}
	// Warm both up: schema resolution, connection pools, first-use paths.
	for range 10 {
		if err := p.heddleCall(ctx, "echo", echoArgs); err != nil {
			b.Fatal(err)
		}
		if err := p.rawCall(ctx, "echo", echoArgs); err != nil {
			b.Fatal(err)
		}
		if err := p.controlCall(ctx, "echo", echoArgs); err != nil {
			b.Fatal(err)
		}
	}
	return p
}

// echoArgs are the arguments of every echo call.
var echoArgs = map[string]any{"text": "hello, heddle"}

func (p *benchPair) heddleCall(ctx context.Context, tool string, args map[string]any) error {
	res, err := p.ts.Call(ctx, tool, args)
	return checkResult(res, err)
}

func (p *benchPair) rawCall(ctx context.Context, tool string, args map[string]any) error {
	res, err := p.raw.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	return checkResult(res, err)
}

func (p *benchPair) controlCall(ctx context.Context, tool string, args map[string]any) error {
	res, err := p.control.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	return checkResult(res, err)
}

// rawDeadlineCall is a raw call under a per-call deadline, as a careful
// hand-written client would make it (heddle sets two: the supervisor's and
// the transport's).
func (p *benchPair) rawDeadlineCall(ctx context.Context, tool string, args map[string]any) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return p.rawCall(ctx, tool, args)
}

// side returns the benchmark's ways of calling, by name.
func (p *benchPair) side(name string) func(context.Context, string, map[string]any) error {
	switch name {
	case "heddle":
		return p.heddleCall
	case "raw+deadline":
		return p.rawDeadlineCall
	}
	return p.rawCall
}

func checkResult(res *mcp.CallToolResult, err error) error {
	switch {
	case err != nil:
		return err
	case res.IsError:
		b, _ := json.Marshal(res)
		return fmt.Errorf("tool error: %s", b)
	}
	return nil
}

// p50 returns the median of ds in nanoseconds. It sorts ds.
func p50(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[len(ds)/2])
}

// BenchmarkCall measures one echo call, sequentially, through a toolset and
// through the raw go-sdk session (with no deadline, and with one per call),
// over each transport. Besides ns/op, B/op and allocs/op it reports the
// median call (p50-ns). The durations slice is allocated before the timer
// starts, so it does not count in B/op.
func BenchmarkCall(b *testing.B) {
	for _, tr := range benchTransports {
		b.Run(tr, func(b *testing.B) {
			p := newBenchPair(b, tr)
			for _, side := range []string{"heddle", "raw", "raw+deadline"} {
				call := p.side(side)
				b.Run(side, func(b *testing.B) {
					ctx := context.Background()
					ds := make([]time.Duration, b.N)
					b.ReportAllocs()
					b.ResetTimer()
					for i := range b.N {
						t0 := time.Now()
						if err := call(ctx, "echo", echoArgs); err != nil {
							b.Fatal(err)
						}
						ds[i] = time.Since(t0)
					}
					b.StopTimer()
					b.ReportMetric(p50(ds), "p50-ns")
				})
			}
		})
	}
}

// BenchmarkCallOverhead interleaves the two sides of BenchmarkCall — each
// iteration makes one call through the toolset and one through the raw
// session, in random order — so that drift in the machine's speed affects
// both alike. The order is random rather than alternating because the
// garbage collector runs every few calls: a fixed pattern can fall in step
// with it and favour one side. The sessions are opened afresh
// overheadBlocks times within a run, because a session's goroutines keep
// their luck with the scheduler for as long as the session lives: a run on
// one pair of sessions measures that luck as much as heddle. It reports
// both medians and heddle's overhead over raw go-sdk on the median, in
// percent.
//
// The control sub-benchmark measures the same way a second raw session
// against the first, which adds nothing: its overhead-% is the noise of
// the measurement on the machine at the time.
func BenchmarkCallOverhead(b *testing.B) {
	for _, tr := range benchTransports {
		for _, side := range []string{"heddle", "control"} {
			b.Run(tr+"/"+side, func(b *testing.B) {
				ctx := context.Background()
				hd := make([]time.Duration, 0, b.N)
				rd := make([]time.Duration, 0, b.N)
				order := rand.New(rand.NewPCG(1, 2))
				b.ReportAllocs()
				for blk := range overheadBlocks {
					n := b.N / overheadBlocks
					if blk < b.N%overheadBlocks {
						n++
					}
					if n == 0 {
						continue
					}
					b.StopTimer()
					p := newBenchPair(b, tr)
					call := p.heddleCall
					if side == "control" {
						call = p.controlCall
					}
					b.StartTimer()
					for range n {
						first, second := call, p.rawCall
						swap := order.IntN(2) == 1
						if swap {
							first, second = second, first
						}
						t0 := time.Now()
						if err := first(ctx, "echo", echoArgs); err != nil {
							b.Fatal(err)
						}
						t1 := time.Now()
						if err := second(ctx, "echo", echoArgs); err != nil {
							b.Fatal(err)
						}
						fd, sd := t1.Sub(t0), time.Since(t1)
						if swap {
							fd, sd = sd, fd
						}
						hd, rd = append(hd, fd), append(rd, sd)
					}
					b.StopTimer()
					p.close()
					b.StartTimer()
				}
				b.StopTimer()
				h, r := p50(hd), p50(rd)
				b.ReportMetric(h, side+"-p50-ns")
				b.ReportMetric(r, "raw-p50-ns")
				b.ReportMetric(100*(h/r-1), "overhead-%")
			})
		}
	}
}

// overheadBlocks is how many times BenchmarkCallOverhead opens its sessions
// afresh within one run.
const overheadBlocks = 10

// BenchmarkCallParallel64 measures echo calls made by 64 goroutines at once
// on one shared client (one toolset, or one raw session). ns/op is wall time
// per call at that concurrency.
func BenchmarkCallParallel64(b *testing.B) {
	const callers = 64
	for _, tr := range benchTransports {
		b.Run(tr, func(b *testing.B) {
			p := newBenchPair(b, tr)
			for _, side := range []string{"heddle", "raw"} {
				call := p.side(side)
				b.Run(side, func(b *testing.B) {
					ctx := context.Background()
					b.SetParallelism((callers + gomaxprocs() - 1) / gomaxprocs())
					b.ReportAllocs()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := call(ctx, "echo", echoArgs); err != nil {
								b.Error(err)
								return
							}
						}
					})
				})
			}
		})
	}
}

// BenchmarkSleep8x50ms makes 8 calls of sleep {ms: 50} in parallel through
// one toolset (and through one raw session) over stdio, and reports the wall
// time of each batch. The target is 60 ms: the calls must not queue behind
// each other.
func BenchmarkSleep8x50ms(b *testing.B) {
	p := newBenchPair(b, "stdio")
	args := map[string]any{"ms": 50}
	for _, side := range []string{"heddle", "raw"} {
		call := p.side(side)
		b.Run(side, func(b *testing.B) {
			ctx := context.Background()
			var worst time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				var g errgroup.Group
				for range 8 {
					g.Go(func() error { return call(ctx, "sleep", args) })
				}
				if err := g.Wait(); err != nil {
					b.Fatal(err)
				}
				worst = max(worst, time.Since(t0))
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/1e6, "ms/batch")
			b.ReportMetric(float64(worst)/1e6, "worst-ms")
		})
	}
}

// startupServers is the number of stdio servers of the start-up benchmark.
const startupServers = 50

// startupPlan is a plan of startupServers stdio servers of the test binary,
// all granted to one agent.
func startupPlan(b *testing.B) *plan.Plan {
	var api, agent strings.Builder
	api.WriteString("ai:\n  startup_timeout_ms: 60000\n  mcp_servers:\n")
	agent.WriteString("capabilities:\n")
	for i := range startupServers {
		fmt.Fprintf(&api, "    s%02d: {transport: stdio, command: $TESTMCP}\n", i)
		fmt.Fprintf(&agent, "  - {kind: mcp, server: s%02d}\n", i)
	}
	return compilePlan(b, api.String(), map[string]string{"many": agent.String()})
}

// openHeddle is one heddle start-up: runtime.Open of the whole plan (every
// child started and connected, every server's tools listed, filters
// verified, the agent's name index built).
func openHeddle(ctx context.Context, p *plan.Plan) (func(), error) {
	rt, err := runtime.Open(ctx, p, runtime.Options{})
	if err != nil {
		return nil, err
	}
	return func() { _ = rt.Close() }, nil
}

// openRaw is the plain alternative: an errgroup that starts and connects
// startupServers raw go-sdk clients to the same binary. With list set, each
// also lists its tools, which runtime.Open does as well.
func openRaw(ctx context.Context, list bool) (func(), error) {
	sessions := make([]*mcp.ClientSession, startupServers)
	closeAll := func() {
		var wg sync.WaitGroup
		for _, s := range sessions {
			if s != nil {
				wg.Go(func() { _ = s.Close() })
			}
		}
		wg.Wait()
	}
	g, gctx := errgroup.WithContext(ctx)
	for i := range sessions {
		g.Go(func() error {
			t := &mcp.CommandTransport{Command: exec.Command(testmcpBin), TerminateDuration: 2 * time.Second}
			s, err := newRawClient().Connect(gctx, t, nil)
			if err != nil {
				return err
			}
			sessions[i] = s
			if list {
				_, err = s.ListTools(gctx, nil)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		closeAll()
		return nil, err
	}
	return closeAll, nil
}

// BenchmarkStartup50Stdio measures starting 50 stdio servers: runtime.Open
// against a plain errgroup of 50 raw go-sdk connects (and, for reference, 50
// connects each followed by tools/list, the listing runtime.Open does too).
// Shutting down is not timed. The paired sub-benchmark runs all three in
// each iteration, rotating which goes first, and reports the ratios of
// heddle's median to the others'; the target is 1.1 against raw.
func BenchmarkStartup50Stdio(b *testing.B) {
	p := startupPlan(b)
	ctx := context.Background()
	sides := []struct {
		name string
		open func() (func(), error)
	}{
		{"heddle", func() (func(), error) { return openHeddle(ctx, p) }},
		{"raw", func() (func(), error) { return openRaw(ctx, false) }},
		{"raw+list", func() (func(), error) { return openRaw(ctx, true) }},
	}
	for _, side := range sides {
		b.Run(side.name, func(b *testing.B) {
			ds := make([]time.Duration, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				closeAll, err := side.open()
				ds[i] = time.Since(t0)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				closeAll()
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/1e6, "ms/op")
			b.ReportMetric(p50(ds)/1e6, "p50-ms")
		})
	}
	b.Run("paired", func(b *testing.B) {
		ds := make([][]time.Duration, len(sides))
		for k := range ds {
			ds[k] = make([]time.Duration, b.N)
		}
		for i := range b.N {
			for j := range sides {
				k := (i + j) % len(sides) // rotate which goes first
				t0 := time.Now()
				closeAll, err := sides[k].open()
				ds[k][i] = time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				closeAll()
				b.StartTimer()
			}
		}
		b.StopTimer()
		h, r, rl := p50(ds[0]), p50(ds[1]), p50(ds[2])
		b.ReportMetric(h/1e6, "heddle-p50-ms")
		b.ReportMetric(r/1e6, "raw-p50-ms")
		b.ReportMetric(rl/1e6, "raw+list-p50-ms")
		b.ReportMetric(math.Round(100*h/r)/100, "ratio-raw")
		b.ReportMetric(math.Round(100*h/rl)/100, "ratio-raw+list")
	})
}
