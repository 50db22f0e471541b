package runtime_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// newNoopExportProvider is a tracer provider that samples every span and
// hands it, through the batch processor heddle's commands use, to an
// exporter that discards it: the whole cost of tracing on, less the
// network.
func newNoopExportProvider(b *testing.B) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

// BenchmarkCallTracing interleaves, in random order in each iteration,
// one echo call through a toolset with tracing off (the global provider, a
// no-op: what a worker without OTEL_ settings runs), one through a toolset
// whose spans are sampled and exported to a no-op exporter, one through
// the raw go-sdk session, and one through a second pair with tracing off
// (a control of how far two pairs' medians lie apart), so that drift in
// the machine's speed affects all four alike. It reports the medians,
// tracing off's overhead over raw go-sdk, and the cost of tracing on over
// off and over the control, on the median.
func BenchmarkCallTracing(b *testing.B) {
	for _, tr := range benchTransports {
		b.Run(tr, func(b *testing.B) {
			ctx := context.Background()
			off := newBenchPair(b, tr)
			on := newTracedBenchPair(b, tr, newNoopExportProvider(b))
			// control is a second pair with tracing off, made as on's is:
			// how far two pairs' medians lie apart without tracing.
			control := newTracedBenchPair(b, tr, nil)
			calls := []func(context.Context, string, map[string]any) error{off.heddleCall, on.heddleCall, off.rawCall, control.heddleCall}
			var ds [4][]time.Duration
			for i := range ds {
				ds[i] = make([]time.Duration, 0, b.N)
			}
			order := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				perm := [4]int{0, 1, 2, 3}
				order.Shuffle(4, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
				for _, k := range perm {
					t0 := time.Now()
					if err := calls[k](ctx, "echo", echoArgs); err != nil {
						b.Fatal(err)
					}
					ds[k] = append(ds[k], time.Since(t0))
				}
			}
			b.StopTimer()
			offP, onP, rawP := p50(ds[0]), p50(ds[1]), p50(ds[2])
			b.ReportMetric(offP, "off-p50-ns")
			b.ReportMetric(onP, "on-p50-ns")
			b.ReportMetric(rawP, "raw-p50-ns")
			b.ReportMetric(100*(offP/rawP-1), "off-overhead-%")
			b.ReportMetric(onP-offP, "on-minus-off-ns")
			b.ReportMetric(p50(ds[3])-offP, "control-minus-off-ns")
			b.ReportMetric(onP-p50(ds[3]), "on-minus-control-ns")
		})
	}
}

// BenchmarkCallTraced is BenchmarkCall's heddle side with tracing on
// (every span sampled, a no-op exporter), for its B/op and allocs/op.
func BenchmarkCallTraced(b *testing.B) {
	for _, tr := range benchTransports {
		b.Run(tr, func(b *testing.B) {
			p := newTracedBenchPair(b, tr, newNoopExportProvider(b))
			ctx := context.Background()
			ds := make([]time.Duration, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				if err := p.heddleCall(ctx, "echo", echoArgs); err != nil {
					b.Fatal(err)
				}
				ds[i] = time.Since(t0)
			}
			b.StopTimer()
			b.ReportMetric(p50(ds), "p50-ns")
		})
	}
}
