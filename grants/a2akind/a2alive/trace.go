package a2alive

import (
	"context"
	"net/http"
	"strconv"

	"github.com/heddlehq/heddle/runtime/driver"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// The attributes of an A2A request's span. OpenTelemetry has no
// conventions for A2A yet; these follow the MCP ones' shape.
const (
	attrA2AMethod = attribute.Key("a2a.method.name")
	attrA2AAgent  = attribute.Key("a2a.agent.name")
	attrA2AVer    = attribute.Key("a2a.protocol.version")
)

// startRPC starts the CLIENT span of one JSON-RPC request to the remote
// agent, a child of the call's execute_tool span in ctx, and sends its W3C
// trace context in req's traceparent and tracestate headers.
func (a *remote) startRPC(ctx context.Context, req *http.Request, ep *endpoint, method string, id int64) trace.Span {
	if driver.Untraced(ctx, a.inst.tp) {
		return trace.SpanFromContext(ctx)
	}
	ctx, span := a.inst.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindClient))
	if sc := span.SpanContext(); sc.IsValid() {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	if !span.IsRecording() {
		return span
	}
	span.SetName(method + " " + a.name)
	ver := version1
	if ep.legacy {
		ver = version03
	}
	span.SetAttributes(attrA2AMethod.String(method), attrA2AAgent.String(a.name), attrA2AVer.String(ver),
		semconv.JSONRPCRequestIDKey.String(strconv.FormatInt(id, 10)),
		semconv.NetworkTransportTCP, semconv.NetworkProtocolNameKey.String("http"),
		semconv.ServerAddressKey.String(req.URL.Hostname()))
	if p, err := strconv.Atoi(req.URL.Port()); err == nil {
		span.SetAttributes(semconv.ServerPortKey.Int(p))
	} else if p := map[string]int{"http": 80, "https": 443}[req.URL.Scheme]; p != 0 {
		span.SetAttributes(semconv.ServerPortKey.Int(p))
	}
	return span
}

// endRPC ends a request's span: error.type is tool_error for an answer the
// model reads as the agent's failure, and the heddle code (or timeout,
// cancelled) for a request that failed.
func endRPC(span trace.Span, ans *answer, err error) {
	driver.EndSpan(span, driver.ErrorType(err, ans != nil && ans.isError))
}

// tracerOf is the tracer of the kind's spans.
func tracerOf(env driver.Env) (trace.TracerProvider, trace.Tracer) {
	tp := env.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp, tp.Tracer(driver.TracerName)
}
