package runtime_test

import (
	"context"
	"fmt"
	"testing/fstest"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/usecase"
)

// A worker that traces hands the runtime its tracer provider; each call is
// an execute_tool span, with the model's id of the call when the caller
// gives it (WithCallID). Here the spans go to memory; a real worker
// exports them (heddle's commands set that up from the OTEL_ environment).
func ExampleWithCallID() {
	usecase.Register("example.traced", func(context.Context, greeting) (string, error) { return "done", nil }, usecase.ReadOnly())
	cfg, _ := config.Load(config.Options{FS: fstest.MapFS{
		"config/api.yaml":          {Data: []byte("ai: {}\n")},
		"agents/tracer/agent.yaml": {Data: []byte("capabilities: [{kind: usecase, keys: [example.traced]}]\n")},
	}})
	p, _ := compile.Compile(compile.Input{Config: cfg, Usecases: usecase.Keys()})
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())
	rt, err := runtime.Open(context.Background(), p, runtime.Options{TracerProvider: tp})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	ts, _ := rt.Toolset("tracer")

	_, _ = ts.Call(context.Background(), "example_traced", map[string]any{"name": "bob"}, runtime.WithCallID("call_1"))
	for _, s := range spans.GetSpans() {
		fmt.Println(s.Name, s.SpanKind)
		for _, kv := range s.Attributes {
			if kv.Key == "gen_ai.tool.call.id" || kv.Key == "heddle.tool.source" {
				fmt.Println(" ", kv.Key, kv.Value.AsString())
			}
		}
	}
	// Output:
	// execute_tool example_traced internal
	//   gen_ai.tool.call.id call_1
	//   heddle.tool.source usecase
}
