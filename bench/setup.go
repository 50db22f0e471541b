package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sync/errgroup"

	heddleruntime "github.com/heddlehq/heddle/runtime"
)

// opener opens n sessions to t, each connected and with its tools listed,
// and returns the function that closes them all.
type opener func(ctx context.Context, t target, n int) (func(), error)

// setupKind is one client's way of opening many sessions, for the
// start-up and held-session rows; node's is its worker's.
type setupKind struct {
	name string
	open opener
	node *nodeWorker // set for the TypeScript SDK, which measures itself
}

// openHeddleN is runtime.Open of a deployment of n servers of t (compiled
// beforehand, not timed): every server started or dialled, connected and
// its tools listed, the agent's tools named.
func openHeddleN(ctx context.Context, t target, n int) (func(), error) {
	p, err := heddlePlan(heddleServers(t, n))
	if err != nil {
		return nil, err
	}
	return func() (func(), error) {
		rt, err := heddleruntime.Open(ctx, p, heddleruntime.Options{})
		if err != nil {
			return nil, err
		}
		return func() { _ = rt.Close() }, nil
	}()
}

// openAll runs n opens at once in an errgroup and returns the closer of
// every one that succeeded.
func openAll(ctx context.Context, n int, open func(ctx context.Context) (func(), error)) (func(), error) {
	closers := make([]func(), n)
	closeAll := func() {
		var wg sync.WaitGroup
		for _, c := range closers {
			if c != nil {
				wg.Go(c)
			}
		}
		wg.Wait()
	}
	g, gctx := errgroup.WithContext(ctx)
	for i := range closers {
		g.Go(func() (err error) {
			closers[i], err = open(gctx)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		closeAll()
		return nil, err
	}
	return closeAll, nil
}

// openGoSDKN is an errgroup of n go-sdk connects to t, each followed by
// tools/list.
func openGoSDKN(ctx context.Context, t target, n int) (func(), error) {
	hc, closeIdle := pooledHTTPClient()
	closeAll, err := openAll(ctx, n, func(ctx context.Context) (func(), error) {
		sess, err := newGoSDKClient().Connect(ctx, goSDKTransport(t, hc), nil)
		if err != nil {
			return nil, err
		}
		closer := func() { _ = sess.Close() }
		if _, err := sess.ListTools(ctx, nil); err != nil {
			closer()
			return nil, err
		}
		return closer, nil
	})
	if err != nil {
		closeIdle()
		return nil, err
	}
	return func() { closeAll(); closeIdle() }, nil
}

// openMCPGoN is an errgroup of n mcp-go connects to t, each followed by
// tools/list. Each HTTP client has a pool of its own, as mcp-go's
// constructors give it.
func openMCPGoN(ctx context.Context, t target, n int) (func(), error) {
	return openAll(ctx, n, func(ctx context.Context) (func(), error) {
		c, closeC, err := dialMCPGo(ctx, t)
		if err != nil {
			return nil, err
		}
		closer := func() { _ = closeC() }
		if _, err := c.ListTools(ctx, mcpgomcp.ListToolsRequest{}); err != nil {
			closer()
			return nil, err
		}
		return closer, nil
	})
}

// startup measures one start-up of n stdio servers: the time until every
// session is connected and has listed its tools, the client process's CPU
// and allocations meanwhile. Closing is not measured.
func (k setupKind) startup(ctx context.Context, bin string, n int) (sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if k.node != nil {
		var a struct {
			MS    float64 `json:"ms"`
			CPUUS float64 `json:"cpu_us"`
		}
		err := k.node.do(ctx, 2*time.Minute, map[string]any{"op": "startup", "command": bin, "servers": n}, &a)
		return sample{p50: a.MS / 1e3, callsPerSec: nan, cpuPerCall: a.CPUUS / 1e6, bytesPer: nan, allocsPer: nan}, err
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := cpuTime()
	t0 := time.Now()
	closeAll, err := k.open(ctx, target{transport: "stdio", bin: bin}, n)
	wall := time.Since(t0)
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&m1)
	if err != nil {
		return sample{}, fmt.Errorf("%s: start-up of %d: %w", k.name, n, err)
	}
	closeAll()
	return sample{
		p50:         wall.Seconds(),
		callsPerSec: nan,
		cpuPerCall:  cpu.Seconds(),
		bytesPer:    float64(m1.TotalAlloc - m0.TotalAlloc),
		allocsPer:   float64(m1.Mallocs - m0.Mallocs),
	}, nil
}

// heldHeap measures the heap in use per session of n sessions held open to
// the HTTP server at url, each connected and with its tools listed: the
// live heap after a collection, less the live heap before them.
func (k setupKind) heldHeap(ctx context.Context, url string, n int) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if k.node != nil {
		var a struct {
			Heap float64 `json:"heap_per_session"`
		}
		err := k.node.do(ctx, 2*time.Minute, map[string]any{"op": "hold", "url": url, "sessions": n}, &a)
		return a.Heap, err
	}
	before := liveHeap()
	closeAll, err := k.open(ctx, target{transport: "http", url: url}, n)
	if err != nil {
		return 0, fmt.Errorf("%s: holding %d sessions: %w", k.name, n, err)
	}
	after := liveHeap()
	closeAll()
	return (after - before) / float64(n), nil
}

// liveHeap is the heap's live bytes after two collections (the second
// frees what finalizers of the first released).
func liveHeap() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc)
}
