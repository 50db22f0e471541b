package testmcp

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TraceToolName is the tool [Options.TraceTool] adds.
const TraceToolName = "trace_context"

// TraceContext is what the trace_context tool returns, as its structured
// content: the W3C trace context its call carried in params._meta and in
// the HTTP request's headers (empty over stdio and in memory).
type TraceContext struct {
	MetaTraceparent   string `json:"meta_traceparent"`
	MetaTracestate    string `json:"meta_tracestate"`
	HeaderTraceparent string `json:"header_traceparent"`
	HeaderTracestate  string `json:"header_tracestate"`
}

func traceContext(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, TraceContext, error) {
	var out TraceContext
	m := req.Params.GetMeta()
	out.MetaTraceparent, _ = m["traceparent"].(string)
	out.MetaTracestate, _ = m["tracestate"].(string)
	if req.Extra != nil && req.Extra.Header != nil {
		out.HeaderTraceparent = req.Extra.Header.Get("traceparent")
		out.HeaderTracestate = req.Extra.Header.Get("tracestate")
	}
	return nil, out, nil
}
