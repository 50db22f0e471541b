package heddlecmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/heddlehq/heddle/internal/otlptest"
	"github.com/heddlehq/heddle/internal/testmcp"
)

// TestTracingWanted: tracing is on only when the OTEL_ environment asks
// for it — an otlp exporter or an OTLP endpoint, never by default — and
// off for none, OTEL_SDK_DISABLED, an exporter or a protocol heddle does
// not have (those two with a reason for a WARN).
func TestTracingWanted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env    []string
		on, ok bool // ok: no warning
	}{
		{nil, false, true},
		{[]string{"OTEL_SERVICE_NAME=w"}, false, true},
		{[]string{"OTEL_TRACES_EXPORTER=otlp"}, true, true},
		{[]string{"OTEL_TRACES_EXPORTER=none", "OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318"}, false, true},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318"}, true, true},
		{[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://c:4318/v1/traces"}, true, true},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318", "OTEL_SDK_DISABLED=true"}, false, true},
		{[]string{"OTEL_TRACES_EXPORTER=zipkin"}, false, false},
		{[]string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, false, false},
		{[]string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf"}, true, true},
	} {
		e := &invocation{environ: tc.env}
		on, why := e.tracingWanted()
		if on != tc.on || (why == "") != tc.ok {
			t.Errorf("%q: on %v, warning %q; want on %v, a warning %v", tc.env, on, why, tc.on, !tc.ok)
		}
	}
}

// TestCallExportsOverOTLP: heddle call with OTEL_EXPORTER_OTLP_ENDPOINT
// exports, before it exits, the call's execute_tool span and its
// tools/call child to a real OTLP/HTTP receiver, under the service name
// of OTEL_SERVICE_NAME; the server received the client span's
// traceparent in _meta.
func TestCallExportsOverOTLP(t *testing.T) {
	collector := otlptest.NewCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL())
	t.Setenv("OTEL_SERVICE_NAME", "triage-worker")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"config/api.yaml":     fmt.Sprintf("ai:\n  mcp_servers:\n    s: {transport: stdio, command: %q, args: [--%s]}\n", testmcpBin, testmcp.FlagTraceTool),
		"agents/a/agent.yaml": "capabilities: [{kind: mcp, server: s}]\n",
	})
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"--format", "json", "call", "a", testmcp.TraceToolName}, &stdout, &stderr, Options{}); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, &stdout, &stderr)
	}
	var exec, client *struct {
		sc, parent trace.SpanContext
		kind       trace.SpanKind
		service    string
	}
	for _, s := range collector.Spans() {
		v := &struct {
			sc, parent trace.SpanContext
			kind       trace.SpanKind
			service    string
		}{sc: s.SpanContext, parent: s.Parent, kind: s.SpanKind}
		for _, kv := range s.Resource.Attributes() {
			if kv.Key == "service.name" {
				v.service = kv.Value.AsString()
			}
		}
		switch s.Name {
		case "execute_tool " + testmcp.TraceToolName:
			exec = v
		case "tools/call " + testmcp.TraceToolName:
			client = v
		}
	}
	if exec == nil || client == nil {
		t.Fatalf("the collector received no execute_tool or tools/call span: %d spans", len(collector.Spans()))
	}
	if exec.kind != trace.SpanKindInternal || client.kind != trace.SpanKindClient {
		t.Errorf("kinds %v, %v", exec.kind, client.kind)
	}
	if client.parent.SpanID() != exec.sc.SpanID() || client.sc.TraceID() != exec.sc.TraceID() {
		t.Errorf("tools/call is not a child of execute_tool")
	}
	if exec.service != "triage-worker" {
		t.Errorf("service.name %q, want OTEL_SERVICE_NAME's", exec.service)
	}
	if !strings.Contains(stdout.String(), client.sc.TraceID().String()+"-"+client.sc.SpanID().String()) {
		t.Errorf("the server did not receive the client span's traceparent:\n%s", &stdout)
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Errorf("--format json printed %q: %v", &stdout, err)
	}
}
