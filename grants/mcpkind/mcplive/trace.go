package mcplive

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/grants/mcpkind/internal/msglimit"
	"github.com/heddlehq/heddle/runtime/driver"
)

// Tracing of MCP requests, after the OpenTelemetry semantic conventions for
// MCP (docs/observability.md): every request heddle sends — the handshake
// (server/discover, initialize), tools/list, tools/call — is an mcp.client
// span of kind CLIENT, a child of whatever span its context carries (a
// call's execute_tool span, a reconnect's span), and carries that span's
// W3C trace context to the server in params._meta and, over HTTP, in the
// traceparent and tracestate headers.

// traceContext is the propagator of the context heddle sends servers:
// W3C Trace Context whatever the program's global propagator is.
var traceContext propagation.TraceContext

// traced is the sending middleware that makes each request's span.
func (s *server) traced(next mcp.MethodHandler) mcp.MethodHandler {
	tracer := s.inst.tracer
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		if driver.Untraced(ctx, s.inst.tp) {
			start := time.Now()
			res, err := next(ctx, method, req)
			s.observe(method, res, err, start)
			return res, err
		}
		ctx, span := tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindClient))
		if !span.SpanContext().IsValid() {
			// No SDK and no caller's trace: nothing to record or send.
			start := time.Now()
			res, err := next(ctx, method, req)
			s.observe(method, res, err, start)
			return res, err
		}
		injectMeta(ctx, req.GetParams())
		if !span.IsRecording() {
			start := time.Now()
			res, err := next(ctx, method, req)
			s.observe(method, res, err, start)
			return res, err
		}
		tool := ""
		if p, ok := req.GetParams().(*mcp.CallToolParams); ok {
			tool = p.Name
			span.SetName(method + " " + tool)
			span.SetAttributes(semconv.GenAIToolNameKey.String(tool), semconv.GenAIOperationNameExecuteTool)
		}
		span.SetAttributes(semconv.McpMethodNameKey.String(method), attribute.String("heddle.server", s.name))
		span.SetAttributes(s.peerAttrs...)
		if cs, ok := req.GetSession().(*mcp.ClientSession); ok {
			if ir := cs.InitializeResult(); ir != nil {
				span.SetAttributes(semconv.McpProtocolVersionKey.String(ir.ProtocolVersion))
			}
			if id := cs.ID(); id != "" {
				span.SetAttributes(semconv.McpSessionIDKey.String(id))
			}
		}
		start := time.Now()
		res, err := next(ctx, method, req)
		etype := s.observe(method, res, err, start)
		if ir, ok := res.(*mcp.InitializeResult); ok && ir != nil {
			span.SetAttributes(semconv.McpProtocolVersionKey.String(ir.ProtocolVersion))
		}
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) && rpcErr.Code != codeRejected && rpcErr.Code != codeClientClosing && rpcErr.Code != codeServerClosing {
			span.SetAttributes(semconv.RPCResponseStatusCodeKey.String(strconv.FormatInt(rpcErr.Code, 10)))
		}
		driver.EndSpan(span, etype)
		return res, err
	}
}

// observe reports one request to the kind's OnOperation and returns its
// error.type: "" when it succeeded, tool_error for a result with isError,
// the JSON-RPC error code of the server's error answer, and otherwise
// timeout, cancelled, or the heddle code the failure is refused with.
func (s *server) observe(method string, res mcp.Result, err error, start time.Time) string {
	etype := errorType(res, err)
	if f := s.inst.kind.OnOperation; f != nil {
		f(Operation{Server: s.name, Method: method, Transport: s.transportName(), ErrorType: etype, Duration: time.Since(start)})
	}
	return etype
}

func errorType(res mcp.Result, err error) string {
	switch {
	case err == nil:
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
			return driver.ErrorTypeToolError
		}
		return ""
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	if _, ok := msglimit.Refused(err); ok {
		return string(diag.ResultTooLarge)
	}
	if isBroken(err) {
		return string(diag.ToolUnavailable)
	}
	if rpcErr := (*jsonrpc.Error)(nil); errors.As(err, &rpcErr) && rpcErr.Code != codeRejected {
		return strconv.FormatInt(rpcErr.Code, 10)
	}
	if c := diag.CodeOf(err); c != "" {
		return string(c)
	}
	return string(diag.ToolUnavailable)
}

// transportName is network.transport of the server's requests: pipe for
// stdio, tcp for HTTP.
func (s *server) transportName() string {
	if s.spec.Transport == mcpkind.TransportStdio {
		return "pipe"
	}
	return "tcp"
}

// peerAttributes are the attributes of the server every span of its
// requests carries: network.transport, and for HTTP server.address and
// server.port.
func peerAttributes(spec *mcpkind.Server) []attribute.KeyValue {
	if spec.Transport == mcpkind.TransportStdio {
		return []attribute.KeyValue{semconv.NetworkTransportPipe}
	}
	attrs := []attribute.KeyValue{semconv.NetworkTransportTCP, semconv.NetworkProtocolNameKey.String("http")}
	u, err := url.Parse(spec.URL)
	if err != nil || u.Host == "" {
		return attrs
	}
	attrs = append(attrs, semconv.ServerAddressKey.String(u.Hostname()))
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if p, err := strconv.Atoi(port); err == nil {
		attrs = append(attrs, semconv.ServerPortKey.Int(p))
	}
	return attrs
}

// injectMeta adds the trace context of ctx to a request's params._meta,
// in a map of its own: the caller's map is never written to.
func injectMeta(ctx context.Context, p mcp.Params) {
	switch p := p.(type) {
	case *mcp.CallToolParams, *mcp.ListToolsParams, *mcp.InitializeParams, *mcp.DiscoverParams:
		if p == nil {
			return
		}
	default:
		return
	}
	old := p.GetMeta()
	m := make(map[string]any, len(old)+2)
	for k, v := range old {
		m[k] = v
	}
	traceContext.Inject(ctx, metaCarrier(m))
	p.SetMeta(m)
}

// metaCarrier carries a trace context in a request's _meta.
type metaCarrier map[string]any

func (c metaCarrier) Get(key string) string {
	v, _ := c[key].(string)
	return v
}

func (c metaCarrier) Set(key, value string) { c[key] = value }

func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// tracingTransport sends the trace context of each request's context in
// the traceparent and tracestate headers, records the JSON-RPC id of a
// request it carries on its span, and an event when the server refuses
// the credentials (what a renewal follows).
type tracingTransport struct {
	next http.RoundTripper
}

func (t tracingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return t.next.RoundTrip(req)
	}
	r := req.Clone(ctx) // a RoundTripper must not change the request it is given
	traceContext.Inject(ctx, propagation.HeaderCarrier(r.Header))
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() && r.Method == http.MethodPost {
		if id := bodyRequestID(r); id != "" {
			span.SetAttributes(semconv.JSONRPCRequestIDKey.String(id))
		}
	}
	resp, err := t.next.RoundTrip(r)
	if err == nil && span.IsRecording() && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		// The server refused the credentials: go-sdk's OAuth handler (or the
		// strategy) renews them and the request is sent again.
		span.AddEvent("heddle.auth.challenge", trace.WithAttributes(semconv.HTTPResponseStatusCodeKey.Int(resp.StatusCode)))
	}
	return resp, err
}

// bodyRequestID is the id of the JSON-RPC request a POST carries, read
// from the start of a copy of its body; "" when there is none to read.
func bodyRequestID(r *http.Request) string {
	head, body := requestHead(r, make([]byte, 256))
	if body == nil {
		return ""
	}
	body.Close()
	return scanID(head)
}

// scanID finds the value of the "id" member in the start of a JSON-RPC
// message, as go-sdk writes one ({"jsonrpc":"2.0","id":1,…}).
func scanID(b []byte) string {
	i := bytes.Index(b, []byte(`"id":`))
	if i < 0 {
		return ""
	}
	v := bytes.TrimLeft(b[i+5:], " ")
	if len(v) > 0 && v[0] == '"' {
		if j := bytes.IndexByte(v[1:], '"'); j >= 0 {
			return string(v[1 : 1+j])
		}
		return ""
	}
	j := 0
	for j < len(v) && (v[j] == '-' || (v[j] >= '0' && v[j] <= '9')) {
		j++
	}
	return string(v[:j])
}

// recordRequestID records on the span of ctx the id of the JSON-RPC request
// msg, as a stdio connection writes it.
func recordRequestID(ctx context.Context, msg jsonrpc.Message) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		switch id := req.ID.Raw().(type) {
		case int64:
			span.SetAttributes(semconv.JSONRPCRequestIDKey.String(strconv.FormatInt(id, 10)))
		case string:
			span.SetAttributes(semconv.JSONRPCRequestIDKey.String(id))
		}
	}
}

// tracerOf is the tracer of the kind's spans.
func tracerOf(env driver.Env) (trace.TracerProvider, trace.Tracer) {
	tp := env.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp, tp.Tracer(driver.TracerName)
}

// startSpan starts an INTERNAL span of the server's own work (a connect, a
// reconnect), the parent of the requests it sends.
func (s *server) startSpan(ctx context.Context, what string) (context.Context, trace.Span) {
	if driver.Untraced(ctx, s.inst.tp) {
		return ctx, trace.SpanFromContext(ctx)
	}
	ctx, span := s.inst.tracer.Start(ctx, what, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetName(what + " " + s.name)
		span.SetAttributes(attribute.String("heddle.server", s.name))
		span.SetAttributes(s.peerAttrs...)
	}
	return ctx, span
}

// endSpan ends a span of startSpan with the code of err, if any.
func endSpan(span trace.Span, err error) {
	etype := ""
	if err != nil {
		etype = driver.ErrorType(err, false)
	}
	driver.EndSpan(span, etype)
}

// event adds an event to the span of ctx (a call's execute_tool span): a
// retry of its request, a re-check of its server.
func event(ctx context.Context, name string, attrs ...attribute.KeyValue) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(name, trace.WithAttributes(attrs...))
	}
}
