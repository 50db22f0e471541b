package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// load is what one client does in one turn: calls calls of tool with args,
// made by callers goroutines sharing the client.
type load struct {
	tool    string
	args    map[string]any
	calls   int
	callers int
}

// sample is one turn's measurements. A metric the client cannot give is
// NaN (the TypeScript client's bytes and allocations).
type sample struct {
	p50         float64 // the median call, in seconds
	callsPerSec float64 // calls over the turn's wall time
	cpuPerCall  float64 // the client process's user+system CPU, in seconds per call
	bytesPer    float64 // bytes allocated per call
	allocsPer   float64 // allocations per call
	round       int     // the round it was measured in (results.add sets it)
}

// callFunc makes one call and reports its failure, a tool error included.
type callFunc func(ctx context.Context, tool string, args map[string]any) error

// measureGo runs l through call in this process and measures it: the
// latency of every call, the turn's wall time, this process's CPU time
// (getrusage RUSAGE_SELF; servers are other processes and are not
// counted) and its allocations (runtime.MemStats). The turn starts from a
// collected heap whose freed memory has been returned to the system
// (debug.FreeOSMemory): after runtime.GC alone, the runtime's background
// scavenger returns the previous turn's garbage during this one, charging
// that CPU to whichever client ran next.
func measureGo(ctx context.Context, call callFunc, l load) (sample, error) {
	lat := make([]time.Duration, l.calls)
	var next atomic.Int64
	var (
		mu       sync.Mutex
		firstErr error
	)
	var wg sync.WaitGroup
	debug.FreeOSMemory()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := cpuTime()
	t0 := time.Now()
	for range l.callers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= l.calls {
					return
				}
				c0 := time.Now()
				err := call(ctx, l.tool, l.args)
				lat[i] = time.Since(c0)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					next.Store(int64(l.calls)) // stop the others
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(t0)
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&m1)
	if firstErr != nil {
		return sample{}, firstErr
	}
	n := float64(l.calls)
	return sample{
		p50:         median(durations(lat)),
		callsPerSec: n / wall.Seconds(),
		cpuPerCall:  cpu.Seconds() / n,
		bytesPer:    float64(m1.TotalAlloc-m0.TotalAlloc) / n,
		allocsPer:   float64(m1.Mallocs-m0.Mallocs) / n,
	}, nil
}

// cpuTime is this process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(fmt.Sprintf("getrusage: %v", err))
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// durations converts ds to seconds.
func durations(ds []time.Duration) []float64 {
	s := make([]float64, len(ds))
	for i, d := range ds {
		s[i] = d.Seconds()
	}
	return s
}

// median returns the median of xs (the mean of the middle two when their
// number is even), NaN when xs is empty. It sorts xs.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return nan
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
