package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/canonjson"
	"github.com/heddlehq/heddle/policy"
)

// CallEvent describes one finished call through a toolset, for metrics and
// the audit trail (Options.OnCall). It carries names, codes and a digest of
// the arguments, never arguments or results.
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

	// Caller is who called (heddle.Caller of the call's context).
	Caller heddle.Identity
	// Decision is the policy's, allow, deny or ask, and Rule what made
	// it: policies.rules[0], policies.denied_tools[0], policies.approval
	// (a destructive tool no rule decided) or default (any other tool no
	// rule decided). Both are empty when the call never reached the
	// policy (an unknown tool).
	Decision, Rule string
	// Approval is asked (policy asked, and no approver answered: the call
	// was refused TOOL_APPROVAL_REQUIRED or handed to its caller), approved
	// or declined; empty when the decision was not ask.
	Approval string
	// TraceID is the trace the call's span belongs to, in hex; empty when
	// the call is not traced.
	TraceID string
	// ArgsSHA256 is the hex SHA-256 of the arguments' canonical JSON (RFC
	// 8785's form): it tells whether two calls had the same arguments
	// without holding them. Set only with Options.DigestArgs.
	ArgsSHA256 string
}

// observed returns a copy of cc that records what authorize decides.
func observed(cc *callConfig) *callConfig {
	c := *cc
	c.ev = &CallEvent{}
	return &c
}

// deniedGlobRE finds the denied_tools entry a policy's reason names.
var deniedGlobRE = regexp.MustCompile(`\S*denied_tools\[\d+\]`)

// decided records the policy's decision of an observed call.
func (c *callConfig) decided(d policy.Decision) {
	if c.ev == nil {
		return
	}
	c.ev.Decision = d.Effect.String()
	switch {
	case d.Rule >= 0:
		c.ev.Rule = "policies.rules[" + strconv.Itoa(d.Rule) + "]"
	case d.Effect == policy.Allow:
		c.ev.Rule = "default"
	case deniedGlobRE.MatchString(d.Reason):
		c.ev.Rule = deniedGlobRE.FindString(d.Reason)
	default:
		c.ev.Rule = "policies.approval"
	}
	if d.Effect == policy.Ask {
		c.ev.Approval = "asked"
	}
}

// answered records an approver's answer to an observed call.
func (c *callConfig) answered(ok bool) {
	if c.ev == nil {
		return
	}
	c.ev.Approval = "declined"
	if ok {
		c.ev.Approval = "approved"
	}
}

// observe reports a finished call to Options.OnCall; ev is what authorize
// recorded of it, or nil.
func (t *Toolset) observe(ctx context.Context, name string, args map[string]any, res *mcp.CallToolResult, err error, d time.Duration, ev *CallEvent) {
	if ev == nil {
		ev = &CallEvent{}
	}
	ev.Agent, ev.Tool, ev.Duration = t.agent.Name, name, d
	ev.Caller = heddle.Caller(ctx)
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		ev.TraceID = sc.TraceID().String()
	}
	if t.rt.opts.DigestArgs {
		ev.ArgsSHA256 = ArgsDigest(args)
	}
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
	t.rt.opts.OnCall(*ev)
}

// ArgsDigest is the hex SHA-256 of args' canonical JSON (RFC 8785's
// form): it tells whether two calls had the same arguments, and one who
// holds the arguments can check them against it, without holding them.
// "" when args cannot be encoded.
func ArgsDigest(args map[string]any) string {
	b, err := canonjson.Marshal(args)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
