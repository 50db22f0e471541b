package mcpfacade_test

// The overhead of the MCP facade: one call through a facade session, its
// host a go-sdk client over in-memory transports (the protocol's cost, no
// network) and over Streamable HTTP on 127.0.0.1 (what `heddle serve`'s
// /mcp/{agent} adds), measured in the same rounds as the same call made in
// process through the toolset (runtime.Toolset.Call), so that the ratios
// mean something whatever the machine. docs/performance.md records a run;
// `make bench BENCH=Facade` runs them.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/internal/benchpair"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/mcpfacade"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/usecase"
)

type benchEcho struct {
	Text string `json:"text"`
}

func init() {
	usecase.Register("facade.echo", func(_ context.Context, in benchEcho) (benchEcho, error) { return in, nil }, usecase.ReadOnly())
}

// benchArgs are the arguments of every call.
var benchArgs = map[string]any{"text": "hello, heddle"}

// benchCaller is who the calls are made for.
var benchCaller = heddle.Identity{Subject: "bench", Roles: []string{"dev"}}

// benchSides opens agent b (the use case facade.echo and the test MCP
// server's echo over an in-memory transport) and returns, for tool, one
// call on each side: inprocess, facade (in-memory transports), http
// (Streamable HTTP on 127.0.0.1, protocol 2026-07-28: a server per
// request) and http-2025 (the same at 2025-11-25: a session). Everything
// is closed when b ends.
func benchSides(b *testing.B, tool string) map[string]func() error {
	b.Helper()
	p := plantest.Must(b, inMemoryServer, map[string]string{"b": "capabilities: [{kind: mcp, server: srv}, {kind: usecase, keys: [facade.echo]}]\n"}, "facade.echo")
	rt, err := runtime.Open(context.Background(), p, runtime.Options{Kinds: testkinds.InMemory(b, nil)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Close() })
	ts, err := rt.Toolset("b")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)

	// In memory: one session, served by Serve.
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() {
		served <- mcpfacade.Serve(ctx, ts, st, &mcpfacade.Options{Agent: "b", Caller: benchCaller, Watch: rt.Watch})
	}()
	mem, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = mem.Close(); <-served })

	// Over HTTP: the Handler behind a front door that only sets the caller.
	h := mcpfacade.NewHandler(&mcpfacade.HandlerOptions{
		Toolset: func(string) (mcpfacade.Toolset, error) { return ts, nil },
		Agent:   func(*http.Request) string { return "b" },
		Session: mcpfacade.Options{Watch: rt.Watch},
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(heddle.WithCaller(r.Context(), benchCaller)))
	}))
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	web, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	// The same at 2025-11-25: a session (web is at 2026-07-28, a server
	// per request).
	web2025, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: tr}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = web.Close()
		_ = web2025.Close()
		_ = h.Close()
		tr.CloseIdleConnections()
		srv.Close()
	})

	callCtx := heddle.WithCaller(context.Background(), benchCaller)
	over := func(cs *mcp.ClientSession) func() error {
		return func() error {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: benchArgs})
			if err == nil && res.IsError {
				b.Fatalf("%s: %s", tool, plantest.Text(res))
			}
			return err
		}
	}
	return map[string]func() error{
		"inprocess": func() error {
			res, err := ts.Call(callCtx, tool, benchArgs)
			if err == nil && res.IsError {
				b.Fatalf("%s: %s", tool, plantest.Text(res))
			}
			return err
		},
		"facade":    over(mem),
		"http":      over(web),
		"http-2025": over(web2025),
	}
}

// benchFacadeTools are the tools called: the use case (about 2 µs in
// process, so the facade's own cost shows) and the MCP echo.
var benchFacadeTools = []struct{ name, tool string }{{"usecase", "facade_echo"}, {"mcp", "echo"}}

// BenchmarkFacadeCall is b.N calls, one at a time, on each side.
func BenchmarkFacadeCall(b *testing.B) {
	for _, bt := range benchFacadeTools {
		sides := benchSides(b, bt.tool)
		for _, side := range []string{"inprocess", "facade", "http", "http-2025"} {
			b.Run(bt.name+"/"+side, func(b *testing.B) {
				call := sides[side]
				b.ReportAllocs()
				for b.Loop() {
					if err := call(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkFacadeOverhead: each round makes one call on each side, in an
// order drawn at random, so that the machine's drift hits all alike; it
// reports each side's median and the facade's ratio to in process.
func BenchmarkFacadeOverhead(b *testing.B) {
	names := []string{"inprocess", "facade", "http", "http-2025"}
	for _, bt := range benchFacadeTools {
		sides := benchSides(b, bt.tool)
		b.Run(bt.name, func(b *testing.B) {
			p50 := benchpair.Medians(benchpair.Rounds(b, names, sides))
			b.ReportMetric(p50["inprocess"]/1e3, "inprocess-p50-µs")
			b.ReportMetric(p50["facade"]/1e3, "facade-p50-µs")
			b.ReportMetric(p50["http"]/1e3, "http-p50-µs")
			b.ReportMetric(p50["facade"]/p50["inprocess"], "facade/inprocess")
			b.ReportMetric(p50["http"]/p50["inprocess"], "http/inprocess")
			b.ReportMetric(p50["http-2025"]/1e3, "http-2025-p50-µs")
			b.ReportMetric(p50["http-2025"]/p50["inprocess"], "http-2025/inprocess")
		})
	}
}
