package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
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

// maxTracedContent bounds the arguments or result recorded in a span when
// Options.TraceContent is set.
const maxTracedContent = 4 << 10

// MCPOperation describes one request heddle sent to an MCP server, for
// the mcp.client.operation.duration metric (Options.OnMCPOperation). It
// carries names and codes only.
type MCPOperation struct {
	Server string
	// Method is the request's MCP method: initialize, tools/list,
	// tools/call, …
	Method string
	// Transport is network.transport: pipe (stdio) or tcp.
	Transport string
	// ErrorType is "" for a request that succeeded, else its error.type
	// (tool_error, a JSON-RPC error code, timeout, a heddle code).
	ErrorType string
	Duration  time.Duration
}

// WithCallID gives the model's id of the call (an OpenAI tool_call id, an
// Anthropic tool_use id); its span records it as gen_ai.tool.call.id.
func WithCallID(id string) CallOption {
	return func(c *callConfig) { c.callID = id }
}

// untraced is the global tracer provider as it is until a program installs
// one: a no-op that delegates to whatever is installed later.
var untraced = otel.GetTracerProvider()

// noSpan is the span of a call that is not traced: it records nothing.
var noSpan = trace.SpanFromContext(context.Background())

// Untraced reports that a span tp would start under ctx could record
// nothing and carry nothing: tp is the global provider, no program has
// installed one, and ctx carries no span context (a caller's, or one
// continued from an incoming traceparent). Kinds skip their spans then, so
// that tracing off costs a call nothing.
func Untraced(ctx context.Context, tp trace.TracerProvider) bool {
	return tp == untraced && otel.GetTracerProvider() == untraced && !trace.SpanContextFromContext(ctx).IsValid()
}

// startSpan starts a call's execute_tool span, the parent of whatever the
// call's source sends. When the call is untraced it starts nothing; with a
// no-op provider nothing below the Start runs.
func (t *Toolset) startSpan(ctx context.Context, name string, args map[string]any, cc *callConfig) (context.Context, trace.Span) {
	if Untraced(ctx, t.rt.opts.TracerProvider) {
		return ctx, noSpan
	}
	ctx, span := t.rt.tracer.Start(ctx, "execute_tool", trace.WithSpanKind(trace.SpanKindInternal))
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetName("execute_tool " + name)
	span.SetAttributes(
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolNameKey.String(name),
		semconv.GenAIAgentNameKey.String(t.agent.Name),
	)
	if cc.callID != "" {
		span.SetAttributes(semconv.GenAIToolCallIDKey.String(cc.callID))
	}
	if t.rt.opts.TraceContent {
		span.SetAttributes(semconv.GenAIToolCallArgumentsKey.String(clipJSON(args)))
	}
	return ctx, span
}

// endSpan ends a call's span: the tool it resolved to, and for a call that
// did not succeed, error.type (the refusal's or failure's heddle code, or
// tool_error) with the span's status ERROR. It logs the call at DEBUG with
// ctx, so that the line carries the span's trace_id and span_id.
func (t *Toolset) endSpan(ctx context.Context, span trace.Span, name string, res *mcp.CallToolResult, err error) {
	if t.rt.log.Enabled(ctx, slog.LevelDebug) {
		code := diag.CodeOf(err)
		if err == nil {
			code = RefusalCode(res)
		}
		t.rt.log.DebugContext(ctx, "call finished", "agent", t.agent.Name, "tool", diag.Clip(name), "code", code, "tool_error", err == nil && res != nil && res.IsError && code == "")
	}
	if !span.IsRecording() {
		span.End()
		return
	}
	if bi := t.idx.Load(); bi != nil {
		if i, ok := bi.names.lookup(name); ok {
			tool := bi.entries[i].tool
			span.SetAttributes(
				attribute.String("heddle.tool.source", tool.Source),
				attribute.String("heddle.tool.server", tool.Server),
				attribute.String("heddle.tool.original_name", tool.OriginalName),
			)
		}
	}
	var etype string
	switch {
	case err != nil:
		etype = string(diag.CodeOf(err))
		if etype == "" {
			etype = semconv.ErrorTypeOther.Value.AsString()
		}
	case res != nil && res.IsError:
		etype = string(RefusalCode(res))
		if etype == "" {
			etype = ErrorTypeToolError
		}
	}
	if t.rt.opts.TraceContent && res != nil {
		span.SetAttributes(semconv.GenAIToolCallResultKey.String(clipJSON(res)))
	}
	EndSpan(span, etype)
}

// clipJSON is v as JSON, at most maxTracedContent bytes of it.
func clipJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	if len(b) > maxTracedContent {
		b = b[:maxTracedContent]
	}
	return string(b)
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
