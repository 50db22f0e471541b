package sqllive_test

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlehq/heddle/runtime"
)

// TestTraced: a statement is a CLIENT span under the call's execute_tool
// span, named by its db.query.summary, with db.system.name and
// db.operation.name, and never the statement's text or its parameters; a
// free-form query is summarised as "SELECT query".
func TestTraced(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	rt := openRuntime(t, strings.ReplaceAll(sqliteAPI, "$DB", buildWarehouse(t)),
		map[string]string{"analyst": `capabilities: [{kind: sql, source: warehouse, query: true}]`}, runtime.Options{TracerProvider: tp})
	ts := toolset(t, rt, "analyst")
	ctx := context.Background()
	call(t, ts, ctx, "by_title", map[string]any{"title": "Disk full on db-replica-2"})
	call(t, ts, ctx, "query", map[string]any{"sql": "select count(*) from incidents where title = 'secret-title'"})

	spans := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		spans[s.Name] = s
	}
	for name, want := range map[string]map[string]string{
		"SELECT by_title": {"db.system.name": "sqlite", "db.operation.name": "SELECT", "db.query.summary": "SELECT by_title", "heddle.sql.statement": "by_title"},
		"SELECT query":    {"db.system.name": "sqlite", "db.operation.name": "SELECT", "db.query.summary": "SELECT query"},
	} {
		s, ok := spans[name]
		if !ok {
			t.Fatalf("no span %q", name)
		}
		if s.SpanKind != trace.SpanKindClient {
			t.Errorf("%s: kind %v", name, s.SpanKind)
		}
		got := map[string]string{}
		for _, kv := range s.Attributes {
			got[string(kv.Key)] = kv.Value.String()
			if v := kv.Value.String(); strings.Contains(v, "Disk full") || strings.Contains(v, "secret-title") || strings.Contains(v, "incidents") {
				t.Errorf("%s: %s records the statement or its parameters: %q", name, kv.Key, v)
			}
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", name, k, got[k], v)
			}
		}
	}
	tool := "by_title"
	for _, s := range exp.GetSpans() {
		if s.Name == "execute_tool "+tool && spans["SELECT by_title"].Parent.SpanID() != s.SpanContext.SpanID() {
			t.Errorf("the statement's span is not a child of execute_tool %s", tool)
		}
	}
}
