package sqllive

import (
	"context"
	"strings"

	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// attrStatement is the name of the deployment's statement a span ran.
const attrStatement = attribute.Key("heddle.sql.statement")

// dbSystems are db.system.name by driver.
var dbSystems = map[string]string{"postgres": "postgresql", "sqlite": "sqlite"}

// startStatement starts the CLIENT span of one statement, after the
// database conventions: db.system.name, db.operation.name (the
// statement's first keyword) and db.query.summary (that keyword and the
// statement's name, or "query" for a free-form query). Neither the
// statement's text nor its parameters are recorded.
func (s *source) startStatement(ctx context.Context, statement, text string) (context.Context, trace.Span) {
	inst := s.db.inst
	if driver.Untraced(ctx, inst.tp) {
		return ctx, trace.SpanFromContext(ctx)
	}
	ctx, span := inst.tracer.Start(ctx, "sql", trace.WithSpanKind(trace.SpanKindClient))
	if !span.IsRecording() {
		return ctx, span
	}
	op := operation(text)
	name := statement
	if name == "" {
		name = "query"
	}
	summary := strings.TrimSpace(op + " " + name)
	span.SetName(summary)
	span.SetAttributes(semconv.DBSystemNameKey.String(dbSystems[s.db.spec.Driver]),
		semconv.DBQuerySummaryKey.String(summary), attribute.String("heddle.sql.source", s.db.name))
	if op != "" {
		span.SetAttributes(semconv.DBOperationNameKey.String(op))
	}
	if statement != "" {
		span.SetAttributes(attrStatement.String(statement))
	}
	return ctx, span
}

// endStatement ends a statement's span with error.type: the heddle code of
// a refusal, tool_error for the database's own refusal of the statement.
func endStatement(span trace.Span, res *mcp.CallToolResult, err error) {
	driver.EndSpan(span, driver.ErrorType(err, res != nil && res.IsError))
}

// operation is the first keyword of a statement, upper-cased: SELECT,
// WITH, …; "" when it starts with none.
func operation(text string) string {
	text = strings.TrimLeft(text, " \t\r\n(")
	end := strings.IndexFunc(text, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') })
	if end < 0 {
		end = len(text)
	}
	return strings.ToUpper(text[:min(end, 16)])
}

// tracerOf is the tracer of the kind's spans.
func tracerOf(env driver.Env) (trace.TracerProvider, trace.Tracer) {
	tp := env.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp, tp.Tracer(driver.TracerName)
}
