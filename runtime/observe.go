package runtime

import (
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallEvent describes one finished call through a toolset, for metrics
// (Options.OnCall). It carries names and codes only, never arguments or
// results.
type CallEvent struct {
	Agent string
	// Tool is the name the call asked for; Kind and Server are those of
	// the tool it resolved to, empty when it resolved to none.
	Tool, Kind, Server string
	// Code is the refusal's or failure's code; empty for a result the tool
	// itself produced.
	Code diag.Code
	// ToolError is set when the tool itself reported a failure (IsError
	// without a code).
	ToolError bool
	// Limit is the setting that refused a TOOL_RATE_LIMITED call:
	// policies.limits[0], ai.mcp_servers.runbooks.max_concurrent.
	Limit    string
	Duration time.Duration
}

// observe reports a finished call to Options.OnCall.
func (t *Toolset) observe(name string, res *mcp.CallToolResult, err error, d time.Duration) {
	ev := CallEvent{Agent: t.agent.Name, Tool: name, Duration: d}
	if bi := t.idx.Load(); bi != nil {
		if i, ok := bi.names.lookup(name); ok {
			ev.Kind, ev.Server = bi.entries[i].tool.Kind, bi.entries[i].tool.Server
		}
	}
	switch {
	case err != nil:
		ev.Code = diag.CodeOf(err)
		if ev.Code == "" {
			ev.Code = "ERROR"
		}
	case res != nil && res.IsError:
		ev.Code = RefusalCode(res)
		ev.ToolError = ev.Code == ""
		ev.Limit, _, _ = LimitOf(res)
	}
	t.rt.opts.OnCall(ev)
}
