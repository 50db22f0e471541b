// Package metrics exposes a runtime in Prometheus's text format:
//
//	heddle_calls_total{agent, source, server, code}      calls by outcome
//	heddle_call_duration_seconds{agent, source, server}  call latency
//	heddle_tool_rate_limited_total{agent, server, limit} calls a limit refused
//	heddle_dependency_up{name, kind, required}           1 when ready
//	heddle_dependency_tools{name, kind}                  tools listed
//	heddle_config_generation                             the live configuration's generation
//	heddle_config_reloads_total{result}                  reloads: "success" or "failure"
//	mcp_client_operation_duration_seconds{mcp_method_name, server, network_transport, error_type}
//	                                                     requests sent to MCP servers
//	heddle_drains_total{outcome}                         drains of serve: complete or cut
//	heddle_drain_cancelled_requests_total                requests a cut drain cancelled
//	heddle_state_fallbacks_total{agent}                  calls admitted by the worker's own
//	                                                     counts, the fleet's store down (on_error: open)
//	heddle_audit_records_lost_total                      audit records that could not be written
//
// code is "ok", "tool_error" (the tool's own failure) or the diagnostic
// code of a refusal or failure (TOOL_DENIED, TRANSPORT_TIMEOUT, …). Labels
// carry names only — agents, servers, codes — never arguments, results or
// anything secret. Tool names are left out of labels on purpose: a server
// decides how many there are. limit is the setting that refused a
// TOOL_RATE_LIMITED call: policies.limits[0], or
// ai.mcp_servers.<server>.max_concurrent.
//
//	m := metrics.New()
//	rt, _ := runtime.Open(ctx, p, runtime.Options{OnCall: m.Observe, OnRateFallback: m.StateFallback}) // and the mcp kind's OnOperation: m.ObserveMCP
//	mux.Handle("GET /metrics", m.Handler(rt))
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds heddle's metrics. It is safe for concurrent use.
type Metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	limited  *prometheus.CounterVec
	reloads  *prometheus.CounterVec
	mcp      *prometheus.HistogramVec
	drains   *prometheus.CounterVec
	cut      prometheus.Counter
	fallback *prometheus.CounterVec
	lost     prometheus.Counter
}

// New returns metrics in a registry of their own, with the Go runtime's and
// the process's collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heddle_calls_total",
			Help: "Tool calls through toolsets, by agent, source kind, server and outcome code.",
		}, []string{"agent", "source", "server", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "heddle_call_duration_seconds",
			Help:    "Latency of tool calls through toolsets.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 25},
		}, []string{"agent", "source", "server"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heddle_tool_rate_limited_total",
			Help: "Tool calls refused with TOOL_RATE_LIMITED, by agent, server and the limit that refused them.",
		}, []string{"agent", "server", "limit"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heddle_config_reloads_total",
			Help: "Configuration reloads (SIGHUP, serve --watch), by result: success, or failure (the old configuration kept serving).",
		}, []string{"result"}),
		// The OpenTelemetry semantic conventions' mcp.client.operation.duration,
		// named as the OTel–Prometheus mapping names it, with its
		// recommended buckets.
		mcp: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcp_client_operation_duration_seconds",
			Help:    "Duration of the requests heddle sent to MCP servers (initialize, tools/list, tools/call, …), by method, server, transport and error type.",
			Buckets: []float64{.01, .02, .05, .1, .2, .5, 1, 2, 5, 10, 30, 60, 120, 300},
		}, []string{"mcp_method_name", "server", "network_transport", "error_type"}),
		drains: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heddle_drains_total",
			Help: "Drains of heddle serve, by outcome: complete (every call in flight was answered) or cut (the grace ran out).",
		}, []string{"outcome"}),
		cut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "heddle_drain_cancelled_requests_total",
			Help: "Requests in flight that a cut drain cancelled and answered SHUTTING_DOWN.",
		}),
		fallback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heddle_state_fallbacks_total",
			Help: "Tool calls admitted by the worker's own counts of policies.limits because the state store a fleet shares (serve.state) could not count them, under on_error: open, by agent.",
		}, []string{"agent"}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "heddle_audit_records_lost_total",
			Help: "Audit records that could not be written (the queue full, the file failing); the next record written says how many (unmapped.lost).",
		}),
	}
	// Both results are there from the start, at 0, so that an alert on
	// failures has a series to compare.
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	m.reg.MustRegister(m.calls, m.duration, m.limited, m.reloads, m.mcp, m.drains, m.cut, m.fallback, m.lost,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Observe records one call; pass it as runtime.Options.OnCall.
func (m *Metrics) Observe(ev runtime.CallEvent) {
	code := string(ev.Code)
	switch {
	case code != "":
	case ev.ToolError:
		code = "tool_error"
	default:
		code = "ok"
	}
	m.calls.WithLabelValues(ev.Agent, ev.Kind, ev.Server, code).Inc()
	m.duration.WithLabelValues(ev.Agent, ev.Kind, ev.Server).Observe(ev.Duration.Seconds())
	if ev.Limit != "" {
		m.limited.WithLabelValues(ev.Agent, ev.Server, ev.Limit).Inc()
	}
}

// Reloaded counts one configuration reload: a success when err is nil, a
// failure otherwise.
func (m *Metrics) Reloaded(err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	m.reloads.WithLabelValues(result).Inc()
}

// ObserveMCP records one request sent to an MCP server, as the mcp kind's
// OnOperation reports it (mcplive.Operation's fields): its method, the
// server, network.transport, its error.type ("" for a request that
// succeeded) and how long it took.
func (m *Metrics) ObserveMCP(method, server, transport, errorType string, d time.Duration) {
	m.mcp.WithLabelValues(method, server, transport, errorType).Observe(d.Seconds())
}

// StateFallback counts one call of agent admitted by the worker's own
// counts, the fleet's store down; pass it as runtime.Options.OnRateFallback.
func (m *Metrics) StateFallback(agent string) {
	m.fallback.WithLabelValues(agent).Inc()
}

// AuditLost counts one audit record that could not be written; pass it as
// audit.Options.OnLost.
func (m *Metrics) AuditLost() { m.lost.Inc() }

// Drained records the end of a drain: complete, or cut with cancelled
// requests still in flight. A nil m records nothing.
func (m *Metrics) Drained(cut bool, cancelled int) {
	if m == nil {
		return
	}
	if !cut {
		m.drains.WithLabelValues("complete").Inc()
		return
	}
	m.drains.WithLabelValues("cut").Inc()
	m.cut.Add(float64(cancelled))
}

// Handler serves the metrics, with each dependency's state read from r at
// scrape time.
func (m *Metrics) Handler(r interface{ Health() runtime.Report }) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(dependencies{r})
	return promhttp.HandlerFor(prometheus.Gatherers{m.reg, reg}, promhttp.HandlerOpts{})
}

var (
	upDesc = prometheus.NewDesc("heddle_dependency_up",
		"1 when the dependency (an MCP server, SQL source or remote agent) is ready, else 0.",
		[]string{"name", "kind", "required"}, nil)
	toolsDesc = prometheus.NewDesc("heddle_dependency_tools",
		"Tools the dependency offered at its last successful listing.",
		[]string{"name", "kind"}, nil)
	generationDesc = prometheus.NewDesc("heddle_config_generation",
		"The generation of the configuration the worker serves: 1 at start-up, one more for each successful reload.",
		nil, nil)
)

// dependencies reports the runtime's health report as gauges.
type dependencies struct {
	r interface{ Health() runtime.Report }
}

func (d dependencies) Describe(ch chan<- *prometheus.Desc) {
	ch <- upDesc
	ch <- toolsDesc
	ch <- generationDesc
}

func (d dependencies) Collect(ch chan<- prometheus.Metric) {
	rep := d.r.Health()
	if rep.Generation > 0 { // a runtime of its own, outside runtime.Generations, has none
		ch <- prometheus.MustNewConstMetric(generationDesc, prometheus.GaugeValue, float64(rep.Generation))
	}
	for _, dep := range rep.Dependencies {
		up := 0.0
		if dep.State == driver.StateReady {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, up, dep.Name, dep.Kind, strconv.FormatBool(dep.Required))
		ch <- prometheus.MustNewConstMetric(toolsDesc, prometheus.GaugeValue, float64(dep.Tools), dep.Name, dep.Kind)
	}
}
