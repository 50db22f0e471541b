package runtime

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/limits"
)

// ConcurrentRetryAfter is the retry_after_ms of a call refused because a
// bound on calls at once was full (policies.limits concurrent, a server's
// max_concurrent): a place frees when a call in flight ends, which nothing
// predicts, so it is a hint rather than a promise.
const ConcurrentRetryAfter = limits.ConcurrentRetryAfter

// ConcurrencyLimitedSource is a source whose calls share a bound on how
// many run at once across every toolset of the runtime, such as an MCP
// server's max_concurrent: its shared client is protected whichever agent
// calls. The toolset enters it for each call it would send, after the
// agent's own policies.limits admitted the call, and leaves it when the
// call ends. A full source is not waited for: the call is refused at once
// with TOOL_RATE_LIMITED.
type ConcurrencyLimitedSource interface {
	// EnterCall takes a place for one call, or returns a
	// *RateLimitedError, taking nothing, when every place is taken.
	EnterCall() error
	// LeaveCall gives back the place of a call that entered.
	LeaveCall()
}

// RateLimitedError is a call refused by a limit. Its code is
// TOOL_RATE_LIMITED; a toolset turns it into the refusal the model reads,
// with RetryAfter and Limit in its _meta. A kind returns it for a limit of
// its own.
type RateLimitedError struct {
	// Limit is the setting that refused the call: policies.limits[0],
	// ai.mcp_servers.runbooks.max_concurrent.
	Limit string
	// RetryAfter is when the limit will admit a call (a hint for bounds on
	// calls at once).
	RetryAfter time.Duration
	// Message says why, naming settings only.
	Message string
}

// Error returns "TOOL_RATE_LIMITED: message".
func (e *RateLimitedError) Error() string { return string(diag.ToolRateLimited) + ": " + e.Message }

// Unwrap returns the coded error, so that diag.CodeOf and diag.Has see
// TOOL_RATE_LIMITED.
func (e *RateLimitedError) Unwrap() error {
	return &diag.Error{Code: diag.ToolRateLimited, Message: e.Message}
}

// Keys of a TOOL_RATE_LIMITED refusal's _meta, besides code. Tracing and
// metrics read the decision from them (see [LimitOf]).
const (
	MetaRetryAfterMS = "retry_after_ms"
	MetaLimit        = "limit"
)

// refusal is the result the model reads for e.
func (e *RateLimitedError) refusal() *mcp.CallToolResult {
	res := refusal(diag.ToolRateLimited, "%s", e.Message)
	res.Meta[MetaRetryAfterMS] = e.RetryAfter.Milliseconds()
	res.Meta[MetaLimit] = e.Limit
	return res
}

// LimitOf returns the limit that refused a TOOL_RATE_LIMITED refusal and
// its retry-after; ok is false for any other result.
func LimitOf(res *mcp.CallToolResult) (limit string, retryAfter time.Duration, ok bool) {
	if RefusalCode(res) != diag.ToolRateLimited {
		return "", 0, false
	}
	limit, _ = res.Meta[MetaLimit].(string)
	var ms int64
	switch v := res.Meta[MetaRetryAfterMS].(type) {
	case int64:
		ms = v
	case int:
		ms = int64(v)
	case float64: // a result that went through JSON
		ms = int64(v)
	}
	return limit, time.Duration(ms) * time.Millisecond, true
}

// admission is the places an admitted call holds; end gives them back.
type admission struct {
	gate  ConcurrencyLimitedSource
	leave func()
}

func (a admission) end() {
	if a.leave != nil {
		a.leave()
	}
	if a.gate != nil {
		a.gate.LeaveCall()
	}
}

// admit checks a call that would be sent against the source's bound on
// calls at once and the agent's policies.limits, in that order, and takes
// its places in both, which the admission gives back when the call ends.
// A call one of them refuses takes nothing from either, and gets the
// refusal the model reads.
func (t *Toolset) admit(e *entry, caller heddle.Identity) (admission, *mcp.CallToolResult) {
	gate, _ := e.src.Source.(ConcurrencyLimitedSource)
	if gate != nil {
		if err := gate.EnterCall(); err != nil {
			if rl, ok := err.(*RateLimitedError); ok {
				return admission{}, rl.refusal()
			}
			return admission{}, refusal(diag.ToolRateLimited, "%s", safeMessage(err))
		}
	}
	if t.limits == nil {
		return admission{gate: gate}, nil
	}
	leave, r := t.limits.Admit(time.Now(), limits.Call{Caller: caller.Subject, Tool: e.tool.Name, OriginalName: e.tool.OriginalName})
	if r != nil {
		if gate != nil {
			gate.LeaveCall()
		}
		return admission{}, (&RateLimitedError{Limit: r.Limit, RetryAfter: r.RetryAfter, Message: r.Error()}).refusal()
	}
	return admission{gate: gate, leave: leave}, nil
}
