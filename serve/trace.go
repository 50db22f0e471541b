package serve

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
)

// incomingTrace is the context of a call with the W3C trace context its
// request carries (traceparent, tracestate), so that the call's
// execute_tool span continues the caller's trace. A request without one,
// or with one that does not parse, starts a trace of its own.
func incomingTrace(r *http.Request) context.Context {
	return propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
}
