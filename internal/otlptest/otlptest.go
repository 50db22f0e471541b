// Package otlptest is an OTLP/HTTP trace receiver for tests: a server on
// 127.0.0.1 that decodes the protobuf ExportTraceServiceRequest bodies an
// exporter posts to /v1/traces and keeps their spans, as the SDK's
// tracetest.SpanStub, so that a test asserts on what went over the wire
// the way it asserts on an in-memory exporter.
//
//	c := otlptest.NewCollector(t)
//	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.URL())
//	… run the program, which exports and flushes …
//	for _, s := range c.Spans() { … s.Name, s.SpanKind, s.Attributes, s.Parent … }
package otlptest

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// maxBody bounds one export request.
const maxBody = 16 << 20

// Collector receives OTLP/HTTP trace exports. It is safe for concurrent
// use; the server is closed when the test ends.
type Collector struct {
	srv *httptest.Server

	mu       sync.Mutex
	spans    []tracetest.SpanStub
	raw      [][]byte // every request body, decompressed
	requests int
	bad      []string // why a request could not be decoded
}

// NewCollector starts a collector on 127.0.0.1.
func NewCollector(t testing.TB) *Collector {
	t.Helper()
	c := &Collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(func() {
		c.srv.Close()
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, b := range c.bad {
			t.Errorf("otlptest: %s", b)
		}
	})
	return c
}

// URL is the collector's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT (the
// exporter appends /v1/traces).
func (c *Collector) URL() string { return c.srv.URL }

// Spans returns every span received so far, in the order received.
func (c *Collector) Spans() []tracetest.SpanStub {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]tracetest.SpanStub(nil), c.spans...)
}

// Raw returns every request body received so far, decompressed: what a
// test searches for a string that must never be exported.
func (c *Collector) Raw() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.raw...)
}

func (c *Collector) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		c.fail("unexpected " + r.Method + " " + r.URL.Path)
		http.NotFound(w, r)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, maxBody)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			c.fail("gzip: " + err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = io.LimitReader(zr, maxBody)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		c.fail("reading: " + err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		c.fail("content type " + ct)
	}
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		c.fail("decoding: " + err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.requests++
	c.raw = append(c.raw, bytes.Clone(b))
	for _, rs := range req.ResourceSpans {
		res := resourceOf(rs.Resource.GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans = append(c.spans, stub(s, res))
			}
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (c *Collector) fail(why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bad = append(c.bad, why)
}

// stub is a received span as the SDK's tracetest describes one.
func stub(s *tracepb.Span, res *resource.Resource) tracetest.SpanStub {
	var tid trace.TraceID
	var sid, pid trace.SpanID
	copy(tid[:], s.TraceId)
	copy(sid[:], s.SpanId)
	copy(pid[:], s.ParentSpanId)
	st := tracetest.SpanStub{
		Name:        s.Name,
		SpanKind:    trace.SpanKind(s.Kind), // OTLP's enum and the API's agree, unspecified being 0
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}),
		Attributes:  attrs(s.Attributes),
		Resource:    res,
	}
	if pid.IsValid() {
		st.Parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid, TraceFlags: trace.FlagsSampled})
	}
	switch s.Status.GetCode() {
	case tracepb.Status_STATUS_CODE_ERROR:
		st.Status.Code = codes.Error
	case tracepb.Status_STATUS_CODE_OK:
		st.Status.Code = codes.Ok
	}
	st.Status.Description = s.Status.GetMessage()
	for _, e := range s.Events {
		st.Events = append(st.Events, sdkEvent(e))
	}
	return st
}

func resourceOf(kvs []*commonpb.KeyValue) *resource.Resource {
	return resource.NewSchemaless(attrs(kvs)...)
}

// attrs converts OTLP attributes; values other than strings, numbers and
// booleans become their text.
func attrs(kvs []*commonpb.KeyValue) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		v := kv.Value
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out = append(out, attribute.String(kv.Key, x.StringValue))
		case *commonpb.AnyValue_IntValue:
			out = append(out, attribute.Int64(kv.Key, x.IntValue))
		case *commonpb.AnyValue_BoolValue:
			out = append(out, attribute.Bool(kv.Key, x.BoolValue))
		case *commonpb.AnyValue_DoubleValue:
			out = append(out, attribute.Float64(kv.Key, x.DoubleValue))
		case *commonpb.AnyValue_BytesValue:
			out = append(out, attribute.String(kv.Key, hex.EncodeToString(x.BytesValue)))
		default:
			out = append(out, attribute.String(kv.Key, v.String()))
		}
	}
	return out
}

func sdkEvent(e *tracepb.Span_Event) sdktrace.Event {
	return sdktrace.Event{Name: e.Name, Attributes: attrs(e.Attributes)}
}
