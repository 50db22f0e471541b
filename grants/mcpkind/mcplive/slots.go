package mcplive

import (
	"fmt"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/runtime/driver"
)

// slots is a server's max_concurrent: the places for calls in flight,
// shared by every agent, use case and handle of the worker, since they
// share the server's one client. A call that finds every place taken is
// refused at once rather than queued: the model reads TOOL_RATE_LIMITED
// with a retry-after, and a slow server never holds callers past their
// deadlines.
type slots struct {
	ch      chan struct{}
	limited *driver.RateLimitedError // the refusal, made once
}

// newSlots returns the slots of a server, or nil when n is 0 (no bound).
func newSlots(server string, n int) *slots {
	if n <= 0 {
		return nil
	}
	return &slots{ch: make(chan struct{}, n), limited: &driver.RateLimitedError{
		Limit:      config.Join("ai.mcp_servers", server, "max_concurrent"),
		RetryAfter: driver.ConcurrentRetryAfter,
		Message:    fmt.Sprintf("server %s is at its max_concurrent of %d calls at once; retry after %d ms", server, n, driver.ConcurrentRetryAfter.Milliseconds()),
	}}
}

// EnterCall takes a place among the server's calls in flight, or refuses
// the call with TOOL_RATE_LIMITED when max_concurrent are.
func (m *source) EnterCall() error {
	s := m.srv.slots
	if s == nil {
		return nil
	}
	select {
	case s.ch <- struct{}{}:
		return nil
	default:
		return s.limited
	}
}

// LeaveCall gives back the place of a call that entered.
func (m *source) LeaveCall() {
	if s := m.srv.slots; s != nil {
		<-s.ch
	}
}

var _ driver.ConcurrencyLimitedSource = (*source)(nil)
