package driver

import (
	"time"

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
