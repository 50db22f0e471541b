package runtime

import (
	"context"
	"log/slog"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
)

// BenchmarkCallSpan measures a call's execute_tool span alone, with no
// server: start and end, as Toolset.Call makes them, with tracing off (the
// global provider with no SDK installed, as a worker without OTEL_ settings
// has it) and on (every span
// sampled, batched to a no-op exporter). The client span of an MCP
// request costs about as much again.
func BenchmarkCallSpan(b *testing.B) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, heddle"}}}
	for _, side := range []string{"off", "on"} {
		b.Run(side, func(b *testing.B) {
			rt := &Runtime{log: slog.New(slog.DiscardHandler), opts: Options{TracerProvider: otel.GetTracerProvider()}}
			if side == "on" {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				rt.opts.TracerProvider = tp
			}
			rt.tracer = rt.opts.TracerProvider.Tracer(driver.TracerName)
			ts := &Toolset{rt: rt, agent: &plan.Agent{Name: "bench"}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				sctx, span := ts.startSpan(ctx, "echo", nil, &noCallOptions)
				ts.endSpan(sctx, span, "echo", res, nil)
			}
		})
	}
}
