package runtime

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/limits"
	"github.com/heddlehq/heddle/runtime/driver"
)

// rateLimited is the result the model reads for e.
func rateLimited(e *driver.RateLimitedError) *mcp.CallToolResult {
	res := refusal(diag.ToolRateLimited, "%s", e.Message)
	res.Meta[driver.MetaRetryAfterMS] = e.RetryAfter.Milliseconds()
	res.Meta[driver.MetaLimit] = e.Limit
	return res
}

// LimitOf returns the limit that refused a TOOL_RATE_LIMITED refusal and
// its retry-after; ok is false for any other result.
func LimitOf(res *mcp.CallToolResult) (limit string, retryAfter time.Duration, ok bool) {
	if RefusalCode(res) != diag.ToolRateLimited {
		return "", 0, false
	}
	limit, _ = res.Meta[driver.MetaLimit].(string)
	var ms int64
	switch v := res.Meta[driver.MetaRetryAfterMS].(type) {
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
	gate  driver.ConcurrencyLimitedSource
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
	gate, _ := e.src.Source.(driver.ConcurrencyLimitedSource)
	if gate != nil {
		if err := gate.EnterCall(); err != nil {
			if rl, ok := err.(*driver.RateLimitedError); ok {
				return admission{}, rateLimited(rl)
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
		return admission{}, rateLimited(&driver.RateLimitedError{Limit: r.Limit, RetryAfter: r.RetryAfter, Message: r.Error()})
	}
	return admission{gate: gate, leave: leave}, nil
}
