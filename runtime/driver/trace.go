package driver

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlehq/heddle/diag"
)

// TracerName is the instrumentation scope of every span heddle makes: the
// runtime's execute_tool spans and its kinds' client spans.
const TracerName = "github.com/heddlehq/heddle"

// ErrorTypeToolError is the error.type of a call whose tool itself reported
// a failure (a result with isError and no heddle code).
const ErrorTypeToolError = "tool_error"

// untraced is the global tracer provider as it is until a program installs
// one: a no-op that delegates to whatever is installed later.
var untraced = otel.GetTracerProvider()

// Untraced reports that a span tp would start under ctx could record
// nothing and carry nothing: tp is the global provider, no program has
// installed one, and ctx carries no span context (a caller's, or one
// continued from an incoming traceparent). Kinds skip their spans then, so
// that tracing off costs a call nothing.
func Untraced(ctx context.Context, tp trace.TracerProvider) bool {
	return tp == untraced && otel.GetTracerProvider() == untraced && !trace.SpanContextFromContext(ctx).IsValid()
}

// ErrorType is a kind's request span's error.type for a request that
// ended with err, or whose answer is the tool's own failure (toolError):
// timeout, cancelled, the heddle code err carries (other when it carries
// none), or tool_error; "" for a request that succeeded.
func ErrorType(err error, toolError bool) string {
	switch {
	case err == nil && toolError:
		return ErrorTypeToolError
	case err == nil:
		return ""
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	if c := diag.CodeOf(err); c != "" {
		return string(c)
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// EndSpan ends a span with its error.type, and the status ERROR, when
// etype is not "" (see ErrorType).
func EndSpan(span trace.Span, etype string) {
	if etype != "" && span.IsRecording() {
		span.SetAttributes(semconv.ErrorTypeKey.String(etype))
		span.SetStatus(codes.Error, etype)
	}
	span.End()
}
