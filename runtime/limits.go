package runtime

import (
	"context"
	"errors"
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
// refusal the model reads. With Options.Rates the rates are counted in
// the fleet's store, under the supervisor's deadline sd: a deadline that
// passes is errSupervisor, the caller's own cancellation ctx.Err().
func (t *Toolset) admit(ctx context.Context, sd time.Time, e *entry, caller heddle.Identity) (admission, *mcp.CallToolResult, error) {
	gate, _ := e.src.Source.(driver.ConcurrencyLimitedSource)
	if gate != nil {
		if err := gate.EnterCall(); err != nil {
			if rl, ok := err.(*driver.RateLimitedError); ok {
				return admission{}, rateLimited(rl), nil
			}
			return admission{}, refusal(diag.ToolRateLimited, "%s", safeMessage(err)), nil
		}
	}
	if t.limits == nil {
		return admission{gate: gate}, nil, nil
	}
	leave, limited, err := t.admitLimits(ctx, sd, limits.Call{Caller: caller.Subject, Tool: e.tool.Name, OriginalName: e.tool.OriginalName})
	if limited != nil || err != nil {
		if gate != nil {
			gate.LeaveCall()
		}
		return admission{}, limited, err
	}
	return admission{gate: gate, leave: leave}, nil, nil
}

// admitLimits admits c by the agent's policies.limits: by the worker's own
// counts, or, with Options.Rates, its rates by the fleet's. When the
// fleet's store cannot count them, on_error decides: closed refuses the
// call with STATE_UNAVAILABLE; open admits it by the worker's own counts
// and tells Options.OnRateFallback.
func (t *Toolset) admitLimits(ctx context.Context, sd time.Time, c limits.Call) (leave func(), limited *mcp.CallToolResult, err error) {
	rs := t.rt.opts.Rates
	if rs == nil {
		leave, r := t.limits.Admit(time.Now(), c)
		return leave, limitedBy(r), nil
	}
	type admitted struct {
		leave func()
		r     *limits.Refusal
	}
	a, err := bounded(ctx, sd, func(ctx context.Context) (admitted, error) {
		leave, r, err := t.limits.AdmitShared(ctx, c, func(ctx context.Context, bs []limits.Bucket) (int, time.Duration, error) {
			return rs.TakeRates(ctx, t.rateBuckets(bs))
		})
		return admitted{leave, r}, err
	})
	switch {
	case err == nil:
		return a.leave, limitedBy(a.r), nil
	case errors.Is(err, errSupervisor):
		return nil, nil, err
	case ctx.Err() != nil:
		return nil, nil, ctx.Err()
	case !rs.OpenOnError():
		if diag.CodeOf(err) == diag.StateUnavailable {
			return nil, refusal(diag.StateUnavailable, "%s", safeMessage(err)), nil
		}
		return nil, refusal(diag.StateUnavailable, "the state store (serve.state) could not count policies.limits; try again later"), nil
	}
	leave, r := t.limits.Admit(time.Now(), c)
	if f := t.rt.opts.OnRateFallback; f != nil && r == nil {
		f(t.agent.Name)
	}
	return leave, limitedBy(r), nil
}

// limitedBy is the result the model reads for r; nil for nil.
func limitedBy(r *limits.Refusal) *mcp.CallToolResult {
	if r == nil {
		return nil
	}
	return rateLimited(&driver.RateLimitedError{Limit: r.Limit, RetryAfter: r.RetryAfter, Message: r.Error()})
}

// rateBuckets are bs, the agent's, as a RateStore reads them.
func (t *Toolset) rateBuckets(bs []limits.Bucket) []RateBucket {
	out := make([]RateBucket, len(bs))
	for i, b := range bs {
		out[i] = RateBucket{Agent: t.agent.Name, Entry: b.Entry, By: b.By, Key: b.Key, Calls: b.Calls, Per: b.Per}
	}
	return out
}

// A RateStore counts the rates of policies.limits where every worker of a
// fleet counts them, so that the fleet admits what one worker would
// (Options.Rates; package statestore's Store.Rates is one, over Redis).
// Each rate entry of an agent that applies to a call is a bucket of calls
// tokens that refills at calls per per, as in one worker; the store
// decides all of a call's buckets at once. Bounds on calls at once are not
// the store's: each worker counts its own calls in flight. A RateStore must
// be safe for concurrent use.
type RateStore interface {
	// TakeRates decides a call against buckets at once: when every bucket
	// holds a token, each gives one and refused is -1; otherwise none
	// gives anything, refused is the index of the bucket that would admit
	// the call last and retryAfter how long until it would. It returns
	// within ctx; an error (STATE_UNAVAILABLE, for the model to read) means
	// nothing was decided.
	TakeRates(ctx context.Context, buckets []RateBucket) (refused int, retryAfter time.Duration, err error)
	// OpenOnError reports what a call meets when TakeRates fails: false
	// refuses it with STATE_UNAVAILABLE (serve.state.on_error: closed);
	// true admits it by the worker's own counts (open).
	OpenOnError() bool
}

// A RateBucket is one rate entry of an agent's policies.limits as it
// counts one call. Agent, Entry, By and Key name it; no part of the name
// is a caller's subject.
type RateBucket struct {
	// Agent is the agent's name.
	Agent string
	// Entry is the entry's index in the agent's policies.limits.
	Entry int
	// By is what the entry counts by: caller, tool or agent.
	By string
	// Key is a digest of the caller's subject (by caller) or of the tool's
	// name (by tool): 16 characters of URL-safe base64; "" by agent.
	Key string
	// Calls and Per are the entry's rate: a burst of Calls, then Calls
	// more every Per.
	Calls int
	Per   time.Duration
}
