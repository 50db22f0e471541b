package runtime

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime/driver"
)

// maxTracedContent bounds the arguments or result recorded in a span when
// Options.TraceContent is set.
const maxTracedContent = 4 << 10

// WithCallID gives the model's id of the call (an OpenAI tool_call id, an
// Anthropic tool_use id); its span records it as gen_ai.tool.call.id.
func WithCallID(id string) CallOption {
	return func(c *callConfig) { c.callID = id }
}

// noSpan is the span of a call that is not traced: it records nothing.
var noSpan = trace.SpanFromContext(context.Background())

// startSpan starts a call's execute_tool span, the parent of whatever the
// call's source sends. When the call is untraced it starts nothing; with a
// no-op provider nothing below the Start runs.
func (t *Toolset) startSpan(ctx context.Context, name string, args map[string]any, cc *callConfig) (context.Context, trace.Span) {
	if driver.Untraced(ctx, t.rt.opts.TracerProvider) {
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
				attribute.String("heddle.tool.source", tool.Kind),
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
			etype = driver.ErrorTypeToolError
		}
	}
	if t.rt.opts.TraceContent && res != nil {
		span.SetAttributes(semconv.GenAIToolCallResultKey.String(clipJSON(res)))
	}
	driver.EndSpan(span, etype)
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
