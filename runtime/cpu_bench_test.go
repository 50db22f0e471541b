package runtime_test

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCallCPU reports the client's CPU time per call (cpu-µs/op: user
// and system, getrusage over b.N calls, garbage collection included) of an
// echo and of a call that waits 20 ms (sleep), one at a time, through a
// toolset and through the raw go-sdk session, over stdio and over
// Streamable HTTP to a server of its own, and the CPU of the idle time
// after calls (idle-after: idle-cpu-µs/21ms). The server is another
// process and is not counted.
func BenchmarkCallCPU(b *testing.B) {
	for _, tr := range []string{"stdio", "http-proc"} {
		b.Run(tr, func(b *testing.B) {
			p := newBenchPair(b, tr)
			for _, tool := range []struct {
				name string
				args map[string]any
			}{{"echo", echoArgs}, {"sleep", map[string]any{"ms": 20}}} {
				for _, side := range []string{"heddle", "raw"} {
					call := p.side(side)
					b.Run(tool.name+"/"+side, func(b *testing.B) {
						ctx := context.Background()
						cpu0 := processCPU(b)
						for range b.N {
							if err := call(ctx, tool.name, tool.args); err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(float64(processCPU(b)-cpu0)/1e3/float64(b.N), "cpu-µs/op")
					})
				}
			}
			// What calls leave behind: the CPU of the idle second after 50
			// echoes (a timer of a call that fires later lands here).
			for _, side := range []string{"heddle", "raw"} {
				call := p.side(side)
				b.Run("idle-after/"+side, func(b *testing.B) {
					ctx := context.Background()
					var idle int64
					for range b.N {
						for range 50 {
							if err := call(ctx, "echo", echoArgs); err != nil {
								b.Fatal(err)
							}
						}
						cpu0 := processCPU(b)
						time.Sleep(idleWindow)
						idle += processCPU(b) - cpu0
					}
					b.ReportMetric(float64(idle)/1e3/float64(b.N)/float64(idleWindow/(21*time.Millisecond)), "idle-cpu-µs/21ms")
				})
			}
		})
	}
}

// idleWindow is the idle time BenchmarkCallCPU's idle-after measures:
// longer than a second, so that anything a call leaves to run a second
// later falls within it.
const idleWindow = 1260 * time.Millisecond

// processCPU is this process's user and system CPU time so far, in
// nanoseconds.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
