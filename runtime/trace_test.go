package runtime_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/otlptest"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
)

// backends are where a spanRecorder's spans go: the SDK's in-memory
// exporter, or the OTLP/HTTP exporter to a collector on 127.0.0.1 that
// decodes what it receives.
var backends = []string{"memory", "otlp"}

// spanRecorder is a tracer provider whose spans are exported as each ends
// and can be read back.
type spanRecorder struct {
	tp    *sdktrace.TracerProvider
	spans func() []tracetest.SpanStub
}

func newSpanRecorder(t *testing.T, backend string) *spanRecorder {
	t.Helper()
	var exp sdktrace.SpanExporter
	r := &spanRecorder{}
	switch backend {
	case "memory":
		mem := tracetest.NewInMemoryExporter()
		exp, r.spans = mem, func() []tracetest.SpanStub { return mem.GetSpans() }
	case "otlp":
		c := otlptest.NewCollector(t)
		var err error
		exp, err = otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(c.URL()+"/v1/traces"))
		if err != nil {
			t.Fatal(err)
		}
		r.spans = c.Spans
	default:
		t.Fatalf("no backend %q", backend)
	}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = r.tp.Shutdown(context.Background()) })
	return r
}

// span returns the one ended span named name, failing the test when there
// is none or more than one.
func (r *spanRecorder) span(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range r.spans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1; spans: %s", len(found), name, r.names())
	}
	return found[0]
}

// all returns every ended span named name.
func (r *spanRecorder) all(name string) []tracetest.SpanStub {
	var found []tracetest.SpanStub
	for _, s := range r.spans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	return found
}

func (r *spanRecorder) names() string {
	var names []string
	for _, s := range r.spans() {
		names = append(names, fmt.Sprintf("%q", s.Name))
	}
	return strings.Join(names, ", ")
}

// attrs is a span's attributes by key, as strings.
func attrs(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// wantAttrs fails the test unless span has every attribute of want ("*":
// present with any non-empty value) and none of those in absent.
func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]string, absent ...string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("span %q has no %s; attributes: %v", s.Name, k, got)
		case v == "*" && g == "":
			t.Errorf("span %q: %s is empty", s.Name, k)
		case v != "*" && g != v:
			t.Errorf("span %q: %s = %q, want %q", s.Name, k, g, v)
		}
	}
	for _, k := range absent {
		if v, ok := got[k]; ok {
			t.Errorf("span %q has %s = %q, want none", s.Name, k, v)
		}
	}
}

// wantChild fails the test unless child's parent is parent.
func wantChild(t *testing.T, parent, child tracetest.SpanStub) {
	t.Helper()
	if child.Parent.SpanID() != parent.SpanContext.SpanID() || child.SpanContext.TraceID() != parent.SpanContext.TraceID() {
		t.Errorf("span %q is not a child of %q (its parent %s, trace %s; want %s, trace %s)", child.Name, parent.Name,
			child.Parent.SpanID(), child.SpanContext.TraceID(), parent.SpanContext.SpanID(), parent.SpanContext.TraceID())
	}
}

// TestTraceCall: a successful call over stdio and over Streamable HTTP is
// an execute_tool span (INTERNAL) with the GenAI attributes, over an
// mcp.client span (CLIENT) "tools/call {tool}" with the MCP attributes;
// the server receives the client span's context as traceparent in
// params._meta and, over HTTP, in the header. A caller's span is the
// parent of execute_tool.
func TestTraceCall(t *testing.T) {
	t.Parallel()
	srv := startHTTPServer(t, 0, "--"+testmcp.FlagTraceTool)
	for _, tc := range []struct {
		transport, server string
		peer              map[string]string
	}{
		{"stdio", fmt.Sprintf("{transport: stdio, command: $TESTMCP, args: [--%s]}", testmcp.FlagTraceTool),
			map[string]string{"network.transport": "pipe"}},
		{"http", fmt.Sprintf("{transport: http, url: %q}", srv.URL()+"/mcp"),
			map[string]string{"network.transport": "tcp", "server.address": "127.0.0.1", "server.port": fmt.Sprint(srv.port)}},
	} {
		for _, backend := range backends {
			t.Run(tc.transport+"/"+backend, func(t *testing.T) {
				t.Parallel()
				rec := newSpanRecorder(t, backend)
				rt := openWith(t, "ai:\n  startup_timeout_ms: 5000\n  mcp_servers:\n    a: "+tc.server+"\n",
					map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`}, runtime.Options{TracerProvider: rec.tp})
				ts := toolsetOf(t, rt, "x")

				ctx, caller := rec.tp.Tracer("test").Start(context.Background(), "agent turn")
				res, err := ts.Call(ctx, testmcp.TraceToolName, nil, runtime.WithCallID("call_7"))
				caller.End()
				if err != nil || res.IsError {
					t.Fatalf("call: %v %v", res, err)
				}

				exec := rec.span(t, "execute_tool trace_context")
				client := rec.span(t, "tools/call trace_context")
				wantChild(t, rec.span(t, "agent turn"), exec)
				wantChild(t, exec, client)
				if exec.SpanKind != trace.SpanKindInternal || client.SpanKind != trace.SpanKindClient {
					t.Errorf("kinds %v and %v, want internal and client", exec.SpanKind, client.SpanKind)
				}
				wantAttrs(t, exec, map[string]string{
					"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "trace_context", "gen_ai.tool.call.id": "call_7",
					"heddle.tool.server": "a",
				}, "error.type", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")
				want := map[string]string{
					"mcp.method.name": "tools/call", "gen_ai.tool.name": "trace_context",
					"mcp.protocol.version": "*", "jsonrpc.request.id": "*",
				}
				for k, v := range tc.peer {
					want[k] = v
				}
				wantAttrs(t, client, want, "error.type")
				if exec.Status.Code == codes.Error || client.Status.Code == codes.Error {
					t.Errorf("statuses %v, %v; want unset", exec.Status, client.Status)
				}

				got := traceContextOf(t, res)
				wantTraceparent := fmt.Sprintf("00-%s-%s-01", client.SpanContext.TraceID(), client.SpanContext.SpanID())
				if got.MetaTraceparent != wantTraceparent {
					t.Errorf("the server received traceparent %q in _meta, want %q", got.MetaTraceparent, wantTraceparent)
				}
				wantHeader := ""
				if tc.transport == "http" {
					wantHeader = wantTraceparent
				}
				if got.HeaderTraceparent != wantHeader {
					t.Errorf("the server received traceparent %q in the header, want %q", got.HeaderTraceparent, wantHeader)
				}

				// The handshake and the listing have spans of their own.
				if len(rec.all("tools/list")) == 0 {
					t.Errorf("no tools/list span; spans: %s", rec.names())
				}
				for _, s := range rec.all("tools/list") {
					wantAttrs(t, s, map[string]string{"mcp.method.name": "tools/list", "network.transport": tc.peer["network.transport"]})
				}
				connect := rec.span(t, "connect a")
				handshakes := append(rec.all("initialize"), rec.all("server/discover")...)
				if len(handshakes) == 0 {
					t.Fatalf("no handshake span; spans: %s", rec.names())
				}
				for _, h := range handshakes {
					wantChild(t, connect, h)
					if h.SpanKind != trace.SpanKindClient {
						t.Errorf("span %q is %v, want client", h.Name, h.SpanKind)
					}
				}
			})
		}
	}
}

// traceContextOf decodes the trace_context tool's answer.
func traceContextOf(t *testing.T, res *mcp.CallToolResult) testmcp.TraceContext {
	t.Helper()
	m := structured(t, res)
	str := func(k string) string { s, _ := m[k].(string); return s }
	return testmcp.TraceContext{MetaTraceparent: str("meta_traceparent"), MetaTracestate: str("meta_tracestate"),
		HeaderTraceparent: str("header_traceparent"), HeaderTracestate: str("header_tracestate")}
}

// TestTraceFailures: a refusal (policy), a tool's own error and a
// transport timeout mark the execute_tool span ERROR with error.type set
// to the heddle code or tool_error; a refused call sends nothing, so it
// has no client span; the client span of a tool error or a timeout is
// ERROR too.
func TestTraceFailures(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testTraceFailures(t, newSpanRecorder(t, backend))
		})
	}
}

func testTraceFailures(t *testing.T, rec *spanRecorder) {
	rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, args: [--destructive, add_tool], timeout_ms: 1500}
`, map[string]string{"x": "capabilities: [{kind: mcp, server: a}]\npolicies: {approval: deny}\n"},
		runtime.Options{TracerProvider: rec.tp})
	ts := toolsetOf(t, rt, "x")
	ctx := heddle.WithCaller(context.Background(), heddle.Identity{Subject: "alice"})

	wantRefusal(t, ts, "add_tool", map[string]any{"name": "made"}, diag.ToolDenied)
	if res, err := ts.Call(ctx, "fail", map[string]any{"message": "no luck"}); err != nil || !res.IsError || runtime.RefusalCode(res) != "" {
		t.Fatalf("fail = %v, %v; want a tool error", res, err)
	}
	wantRefusal(t, ts, "sleep", map[string]any{"ms": 10000}, diag.TransportTimeout)

	for _, tc := range []struct {
		tool, execType, clientType string // clientType "": no client span
	}{
		{"add_tool", string(diag.ToolDenied), ""},
		{"fail", "tool_error", "tool_error"},
		{"sleep", string(diag.TransportTimeout), "timeout"},
	} {
		exec := rec.span(t, "execute_tool "+tc.tool)
		wantAttrs(t, exec, map[string]string{"error.type": tc.execType, "gen_ai.tool.name": tc.tool})
		if exec.Status.Code != codes.Error {
			t.Errorf("span %q: status %v, want error", exec.Name, exec.Status)
		}
		clients := rec.all("tools/call " + tc.tool)
		if tc.clientType == "" {
			if len(clients) != 0 {
				t.Errorf("a refused call sent %d requests", len(clients))
			}
			continue
		}
		if len(clients) != 1 {
			t.Fatalf("%d client spans of %s, want 1", len(clients), tc.tool)
		}
		wantChild(t, exec, clients[0])
		wantAttrs(t, clients[0], map[string]string{"error.type": tc.clientType})
		if clients[0].Status.Code != codes.Error {
			t.Errorf("span %q: status %v, want error", clients[0].Name, clients[0].Status)
		}
	}
}

// TestTraceReconnect: a server that restarts is brought back under a
// "reconnect {server}" span whose children are the new session's
// handshake and listing, marked with its attempts' outcome.
func TestTraceReconnect(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testTraceReconnect(t, newSpanRecorder(t, backend))
		})
	}
}

func testTraceReconnect(t *testing.T, rec *spanRecorder) {
	srv := startHTTPServer(t, 0)
	rt := openWith(t, fmt.Sprintf(`
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    h: {transport: http, url: "%s/mcp", timeout_ms: 5000}
`, srv.URL()), map[string]string{"x": `capabilities: [{kind: mcp, server: h}]`}, runtime.Options{TracerProvider: rec.tp})
	ts := toolsetOf(t, rt, "x")
	mustCall(t, ts, "pid", nil)

	srv.restart()
	eventually(t, 10*time.Second, "a reconnect span that succeeded", func() bool {
		_, _ = ts.Call(context.Background(), "pid", nil)
		for _, s := range rec.all("reconnect h") {
			if s.Status.Code != codes.Error {
				return true
			}
		}
		return false
	})
	var ok tracetest.SpanStub
	for _, s := range rec.all("reconnect h") {
		if s.Status.Code != codes.Error {
			ok = s
		}
	}
	wantAttrs(t, ok, map[string]string{"heddle.server": "h", "network.transport": "tcp"})
	var connect, list bool
	for _, s := range rec.spans() {
		if s.Parent.SpanID() != ok.SpanContext.SpanID() {
			continue
		}
		connect = connect || s.Name == "connect h"
		list = list || s.Name == "tools/list"
	}
	if !connect || !list {
		t.Errorf("the reconnect span's children include connect %v, tools/list %v; spans: %s", connect, list, rec.names())
	}
	for _, s := range rec.all("reconnect h") {
		if s.Status.Code == codes.Error && attrs(s)["error.type"] == "" {
			t.Errorf("a failed reconnect span has no error.type")
		}
	}
}

// TestTraceContentOptIn: arguments and results are recorded only when
// Options.TraceContent is set.
func TestTraceContentOptIn(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			t.Parallel()
			rec := newSpanRecorder(t, "memory")
			rt := openWith(t, "ai:\n  mcp_servers:\n    a: {transport: stdio, command: $TESTMCP}\n",
				map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`}, runtime.Options{TracerProvider: rec.tp, TraceContent: on})
			mustCall(t, toolsetOf(t, rt, "x"), "echo", map[string]any{"text": "in the span?"})
			got := attrs(rec.span(t, "execute_tool echo"))
			for _, k := range []string{"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} {
				if has := strings.Contains(got[k], "in the span?"); has != on {
					t.Errorf("TraceContent %v: %s = %q", on, k, got[k])
				}
			}
		})
	}
}

// TestTraceAuthChallenge: a server that refuses heddle's credentials
// (401) leaves an event on the span of the request it refused, what a
// renewal of the credentials follows, and the handshake's span is ERROR.
func TestTraceAuthChallenge(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(hs.Close)
	rec := newSpanRecorder(t, "memory")
	rt := openWith(t, fmt.Sprintf(`
ai:
  startup_timeout_ms: 3000
  mcp_servers:
    locked: {url: %q, required: false, auth: {kind: bearer, token_ref: "${env:HOME}"}}
`, hs.URL+"/mcp"), map[string]string{"x": `capabilities: [{kind: mcp, server: locked}]`}, runtime.Options{TracerProvider: rec.tp})
	_ = rt
	found := false
	for _, s := range rec.spans() {
		for _, e := range s.Events {
			if e.Name != "heddle.auth.challenge" {
				continue
			}
			found = true
			if s.SpanKind != trace.SpanKindClient || s.Status.Code != codes.Error {
				t.Errorf("the challenge is on span %q (%v, %v), want a failed client request", s.Name, s.SpanKind, s.Status)
			}
			if got := fmt.Sprint(e.Attributes); !strings.Contains(got, "401") {
				t.Errorf("the challenge event's attributes %s have no 401", got)
			}
		}
	}
	if !found {
		t.Errorf("no heddle.auth.challenge event; spans: %s", rec.names())
	}
}
