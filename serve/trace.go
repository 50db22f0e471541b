package serve

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// incomingTrace is ctx, a call's context, with the W3C trace context its
// request's headers h carry (traceparent, tracestate), so that the call's
// execute_tool span continues the caller's trace. A request without one,
// or with one that does not parse, starts a trace of its own. A request
// the server traces (Options.TracerProvider) has its SERVER span in its
// context already, the caller's as its parent: the call continues that.
func incomingTrace(ctx context.Context, h http.Header) context.Context {
	// Without traceparent, Extract returns the context it is given; asked
	// for it by its lower-case name, it would first make the key's
	// canonical form anew on every call.
	if h.Get("Traceparent") == "" || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(h))
}

// traced makes each request h answers a SERVER span of tp by OpenTelemetry's
// HTTP conventions (otelhttp): the caller's traceparent its parent, named
// by the route once the request is routed ("POST
// /v1/agents/{agent}/tools/{tool}"), with http.route and the status; an
// invoke API call's spans are its children. /metrics is not traced (the probes do
// not reach h).
func traced(h http.Handler, tp trace.TracerProvider) http.Handler {
	routed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if _, route, ok := strings.Cut(r.Pattern, " "); ok {
			trace.SpanFromContext(r.Context()).SetAttributes(semconv.HTTPRoute(route))
		}
	})
	return otelhttp.NewHandler(routed, "heddle serve",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithFilter(func(r *http.Request) bool { return r.URL.Path != "/metrics" }))
}
