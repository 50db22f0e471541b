package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/serve"
)

// TestIncomingTraceparentContinued: a call whose request carries a W3C
// traceparent continues that trace — its execute_tool span's parent is
// the caller's span — and the MCP server receives the same trace id in
// params._meta. A call without one starts a trace of its own. The
// request's tools/call is counted in mcp_client_operation_duration_seconds,
// and the drain in heddle_drains_total.
func TestIncomingTraceparentContinued(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	m := metrics.New()
	p := plantest.Must(t, trustLoopback+inMemoryServer, map[string]string{"a": "capabilities: [{kind: mcp, server: srv}]\n"})
	dial := testmcp.DialInMemory(t, &testmcp.Options{TraceTool: true})
	kinds := testkinds.MCP(func(k *mcplive.Kind) {
		k.Dial = dial
		k.OnOperation = func(op mcplive.Operation) {
			m.ObserveMCP(op.Method, op.Server, op.Transport, op.ErrorType, op.Duration)
		}
	})
	rt, err := runtime.Open(context.Background(), p, runtime.Options{TracerProvider: tp, OnCall: m.Observe, Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(context.Background(), rt, &serve.Options{Addr: ln.Addr(), Metrics: m})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	call := func(traceparent string) testmcp.TraceContext {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/v1/agents/a/tools/"+testmcp.TraceToolName, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		if traceparent != "" {
			req.Header.Set("traceparent", traceparent)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		var out struct {
			StructuredContent testmcp.TraceContext `json:"structuredContent"`
		}
		if res.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil {
			t.Fatalf("call: %d %s", res.StatusCode, body)
		}
		return out.StructuredContent
	}

	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	got := call("00-" + callerTrace + "-" + callerSpan + "-01")
	own := call("")

	var execs []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "execute_tool "+testmcp.TraceToolName {
			execs = append(execs, s)
		}
	}
	if len(execs) != 2 {
		t.Fatalf("%d execute_tool spans, want 2", len(execs))
	}
	continued, fresh := execs[0], execs[1]
	if continued.SpanContext.TraceID().String() != callerTrace || continued.Parent.SpanID().String() != callerSpan || !continued.Parent.IsRemote() {
		t.Errorf("execute_tool: trace %s, parent %s (remote %v); want the caller's trace %s and span %s",
			continued.SpanContext.TraceID(), continued.Parent.SpanID(), continued.Parent.IsRemote(), callerTrace, callerSpan)
	}
	if !strings.HasPrefix(got.MetaTraceparent, "00-"+callerTrace+"-") {
		t.Errorf("the server received traceparent %q, want the caller's trace %s", got.MetaTraceparent, callerTrace)
	}
	if fresh.Parent.IsValid() || fresh.SpanContext.TraceID().String() == callerTrace {
		t.Errorf("a call without traceparent continued a trace (parent %v)", fresh.Parent)
	}
	if !strings.HasPrefix(own.MetaTraceparent, "00-"+fresh.SpanContext.TraceID().String()+"-") {
		t.Errorf("the server received traceparent %q, want the call's own trace %s", own.MetaTraceparent, fresh.SpanContext.TraceID())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v", err)
	}
	rec := httptest.NewRecorder()
	m.Handler(rt).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`mcp_client_operation_duration_seconds_count{error_type="",mcp_method_name="tools/call",network_transport="tcp",server="srv"} 2`,
		`heddle_drains_total{outcome="complete"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}

// TestServerSpan: with Options.TracerProvider, a call over the invoke API
// is a SERVER span named by its route — http.route, the status, the
// caller's traceparent its parent — and the call's execute_tool span is
// its child; a refusal of the front door is a span too (404), and neither
// the probes nor /metrics make one.
func TestServerSpan(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	p := plantest.Must(t, trustLoopback+inMemoryServer, testAgents, usecases...)
	rt, err := runtime.Open(context.Background(), p, runtime.Options{TracerProvider: tp, Kinds: testkinds.InMemory(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	f := startFrontWith(t, "", nil, serve.Options{Generations: runtime.NewGenerations(rt), TracerProvider: tp})
	exp.Reset() // the runtime's start-up: connect, discover, tools/list

	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req := f.request("POST", "/v1/agents/u/tools/serve_echo", `{"text": "traced"}`)
	req.Header.Set("X-Heddle-Subject", "alice")
	req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	if r := f.send(req); r.status != http.StatusOK {
		t.Fatalf("call: %d %s", r.status, r.body)
	}
	if r := f.send(f.request("POST", "/v1/agents/nosuch/tools/serve_echo", `{}`)); r.status != http.StatusNotFound {
		t.Fatalf("a call of an unknown agent: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/livez", "/readyz", "/metrics"} {
		f.send(f.request("GET", path, ""))
	}

	spans := exp.GetSpans()
	var server, refused, exec *tracetest.SpanStub
	for i, s := range spans {
		switch {
		case s.Name == "POST /v1/agents/{agent}/tools/{tool}" && s.SpanContext.TraceID().String() == callerTrace:
			server = &spans[i]
		case s.Name == "POST /v1/agents/{agent}/tools/{tool}":
			refused = &spans[i]
		case s.Name == "execute_tool serve_echo":
			exec = &spans[i]
		}
	}
	if server == nil || exec == nil || refused == nil {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("spans %q: want the call's SERVER span and execute_tool, and the refusal's", names)
	}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "GET") {
			t.Errorf("a span %q: the probes and /metrics make none", s.Name)
		}
	}
	attrs := map[string]string{}
	for _, kv := range server.Attributes {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if server.SpanKind != trace.SpanKindServer || server.Parent.SpanID().String() != callerSpan || !server.Parent.IsRemote() ||
		attrs["http.route"] != "/v1/agents/{agent}/tools/{tool}" || attrs["http.response.status_code"] != "200" || attrs["http.request.method"] != "POST" {
		t.Errorf("the call's span: kind %v, parent %s (remote %v), attributes %v", server.SpanKind, server.Parent.SpanID(), server.Parent.IsRemote(), attrs)
	}
	if exec.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Errorf("execute_tool's parent %s, want the SERVER span %s", exec.Parent.SpanID(), server.SpanContext.SpanID())
	}
	for _, kv := range refused.Attributes {
		if kv.Key == "http.response.status_code" && kv.Value.AsInt64() != http.StatusNotFound {
			t.Errorf("the refusal's span: status %v, want 404", kv.Value.String())
		}
	}
}
