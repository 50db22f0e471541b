package heddlecmd

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Tracing is configured by the OpenTelemetry environment variables only
// (docs/observability.md). heddle traces when OTEL_TRACES_EXPORTER names
// otlp, or when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and OTEL_TRACES_EXPORTER is not
// none: unlike the specification's default exporter, a worker that was
// told nothing sends nothing to localhost:4318. The exporter is OTLP over
// HTTP with protobuf (otlptracehttp, which reads its own OTEL_EXPORTER_OTLP_*
// variables); the SDK reads OTEL_TRACES_SAMPLER and its argument, and the
// resource OTEL_SERVICE_NAME (default heddle) and OTEL_RESOURCE_ATTRIBUTES.
const (
	envTracesExporter  = "OTEL_TRACES_EXPORTER"
	envEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol  = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envSDKDisabled     = "OTEL_SDK_DISABLED"
	envTraceContent    = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
	defaultServiceName = "heddle"
)

// tracingShutdownWait bounds the flush of the spans still buffered when a
// command ends.
const tracingShutdownWait = 5 * time.Second

// tracing is the tracer provider of one invocation, nil while tracing is
// off.
type tracing struct {
	tp *sdktrace.TracerProvider
}

// getenv reads the invocation's environment.
func (e *invocation) getenv(name string) string {
	for _, kv := range e.environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// tracingWanted reports whether the environment asks for traces, and
// explains, for a WARN, a setting heddle cannot follow.
func (e *invocation) tracingWanted() (bool, string) {
	if strings.EqualFold(strings.TrimSpace(e.getenv(envSDKDisabled)), "true") {
		return false, ""
	}
	exporters := strings.TrimSpace(e.getenv(envTracesExporter))
	endpoint := e.getenv(envEndpoint) != "" || e.getenv(envTracesEndpoint) != ""
	switch {
	case exporters == "" && !endpoint:
		return false, ""
	case exporters == "none":
		return false, ""
	}
	if exporters != "" {
		otlp := false
		for _, x := range strings.Split(exporters, ",") {
			switch strings.TrimSpace(x) {
			case "otlp":
				otlp = true
			case "none", "":
			default:
				return false, envTracesExporter + " names an exporter heddle does not have (it has otlp and none)"
			}
		}
		if !otlp {
			return false, ""
		}
	}
	protocol := e.getenv(envTracesProtocol)
	if protocol == "" {
		protocol = e.getenv(envProtocol)
	}
	if protocol != "" && protocol != "http/protobuf" {
		return false, "the OTLP protocol is not http/protobuf, the only one heddle exports with"
	}
	return true, ""
}

// startTracing sets up the tracer provider the environment asks for, once
// per invocation, installs it as the global provider (so that an
// application's operations trace under heddle's spans) and returns it; it
// returns nil when tracing is off, leaving the global provider as it is.
func (e *invocation) startTracing(ctx context.Context, log *slog.Logger) trace.TracerProvider {
	if e.tracing != nil {
		return e.tracing.provider()
	}
	e.tracing = &tracing{}
	on, why := e.tracingWanted()
	if why != "" {
		log.Warn("tracing is off: " + why)
	}
	if !on {
		return nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		log.Warn("tracing is off: the OTLP exporter cannot be set up", "reason", err.Error())
		return nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceNameKey.String(defaultServiceName), semconv.ServiceVersionKey.String(Version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		log.Debug("tracing: part of the resource could not be read", "reason", err.Error())
	}
	e.tracing.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(e.tracing.tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return e.tracing.tp
}

// traceContent reports whether the operator opted in to arguments and
// results in spans: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true,
// the variable OpenTelemetry's GenAI instrumentations read. (A HEDDLE_
// variable would be a configuration overlay.)
func (e *invocation) traceContent() bool {
	return strings.EqualFold(strings.TrimSpace(e.getenv(envTraceContent)), "true")
}

func (t *tracing) provider() trace.TracerProvider {
	if t.tp == nil {
		return nil
	}
	return t.tp
}

// stop flushes the spans still buffered and shuts the provider down,
// waiting at most tracingShutdownWait.
func (t *tracing) stop() {
	if t == nil || t.tp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingShutdownWait)
	defer cancel()
	_ = t.tp.Shutdown(ctx)
}
