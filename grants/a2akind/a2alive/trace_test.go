package a2alive_test

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlehq/heddle/runtime"
)

// TestTraced: a call to a remote agent is a CLIENT span "SendMessage
// {agent}" under the call's execute_tool span, with the a2a.* and
// JSON-RPC attributes; the agent receives its traceparent. An agent's
// error answer marks the span ERROR with error.type tool_error.
func TestTraced(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	f := newFakeAgent(t, nil)
	_, ts := openWith(t, api("echo", f.srv.URL, ""), "", runtime.Options{TracerProvider: tp})
	call(t, ts, "hello")
	call(t, ts, "error")

	var exec, client []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "execute_tool echo":
			exec = append(exec, s)
		case "SendMessage echo":
			client = append(client, s)
		}
	}
	if len(exec) != 2 || len(client) != 2 {
		t.Fatalf("%d execute_tool and %d SendMessage spans, want 2 and 2", len(exec), len(client))
	}
	for i, c := range client {
		if c.SpanKind != trace.SpanKindClient || c.Parent.SpanID() != exec[i].SpanContext.SpanID() {
			t.Errorf("span %d: kind %v, parent %s; want client under %s", i, c.SpanKind, c.Parent.SpanID(), exec[i].SpanContext.SpanID())
		}
		got := map[string]string{}
		for _, kv := range c.Attributes {
			got[string(kv.Key)] = kv.Value.String()
		}
		for _, k := range []string{"a2a.method.name", "a2a.agent.name", "a2a.protocol.version", "jsonrpc.request.id", "server.address", "server.port", "network.transport"} {
			if got[k] == "" {
				t.Errorf("span %d has no %s: %v", i, k, got)
			}
		}
		wantType, wantCode := "", codes.Unset
		if i == 1 {
			wantType, wantCode = "tool_error", codes.Error
		}
		if got["error.type"] != wantType || c.Status.Code != wantCode {
			t.Errorf("span %d: error.type %q, status %v; want %q, %v", i, got["error.type"], c.Status.Code, wantType, wantCode)
		}
	}
	f.mu.Lock()
	traces := append([]string(nil), f.traces...)
	f.mu.Unlock()
	if len(traces) != 2 {
		t.Fatalf("the agent saw %d requests, want 2", len(traces))
	}
	for i, tp := range traces {
		want := fmt.Sprintf("00-%s-%s-01", client[i].SpanContext.TraceID(), client[i].SpanContext.SpanID())
		if tp != want {
			t.Errorf("request %d carried traceparent %q, want %q", i, tp, want)
		}
	}
}
