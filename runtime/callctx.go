package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// callContext is the context one tool call runs under. It ends when the
// caller's context does or when its deadline passes, like the context of
// context.WithDeadline, with one difference: a call that succeeded can leave
// it running for a moment instead of cancelling it.
//
// go-sdk's Streamable HTTP client hands a call its result as soon as the
// result's event arrives and only then reads the rest of the response
// stream, so that the connection can be reused. Cancelling the call's
// context at once races that read; when the cancellation wins, net/http
// closes the connection and the next call dials a new one (about one call
// in six on a loopback server). end(true) therefore detaches the context
// from the caller's and lets it run until drainGrace has passed, enough for
// a well-behaved server to end its stream, and still bounded for one that
// never does.
type callContext struct {
	context.Context // a cancelCtx under context.WithoutCancel(the caller's)
	deadline        time.Time
	cancel          context.CancelCauseFunc
	timer           *time.Timer
	detach          func() bool // stops the caller's cancellation; nil when it cannot end
}

// errCallDeadline is the cause of a callContext whose deadline passed.
var errCallDeadline = fmt.Errorf("the call's deadline passed: %w", context.DeadlineExceeded)

// drainGrace is how long a successful call's context lingers for the SDK to
// finish reading its response.
const drainGrace = time.Second

// callScope is the context one call runs under and how to end it.
type callScope struct {
	ctx    context.Context
	cancel context.CancelFunc // the plain context's
	lc     *callContext       // the lingering one's
}

// callDeadline returns the scope of one call: a callContext when linger is
// set, else a plain context with the deadline. expired(scope.ctx) tells
// whether the deadline ended it.
func callDeadline(parent context.Context, deadline time.Time, linger bool) callScope {
	if !linger {
		ctx, cancel := context.WithDeadlineCause(parent, deadline, errCallDeadline)
		return callScope{ctx: ctx, cancel: cancel}
	}
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	lc := newCallContext(parent, deadline)
	return callScope{ctx: lc, lc: lc}
}

// end ends the scope once the call has returned.
func (s callScope) end(success bool) {
	if s.lc != nil {
		s.lc.end(success)
		return
	}
	s.cancel()
}

// expired reports whether a context from callDeadline ended at its own
// deadline (rather than its caller's).
func expired(ctx context.Context) bool { return context.Cause(ctx) == errCallDeadline }

// newCallContext returns a context that ends when parent does or at
// deadline, whichever comes first. The caller must call end.
func newCallContext(parent context.Context, deadline time.Time) *callContext {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	c := &callContext{Context: ctx, deadline: deadline, cancel: cancel}
	if parent.Done() != nil {
		c.detach = context.AfterFunc(parent, func() { cancel(context.Cause(parent)) })
	}
	c.timer = time.AfterFunc(time.Until(deadline), func() { cancel(errCallDeadline) })
	return c
}

// Deadline reports the call's deadline.
func (c *callContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Err reports context.DeadlineExceeded once the deadline (the call's own or
// the caller's) has passed, context.Canceled once the caller cancelled, and
// nil before.
func (c *callContext) Err() error {
	if c.Context.Err() == nil {
		return nil
	}
	if errors.Is(context.Cause(c.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return context.Canceled
}

// end releases the context once the call has returned. After a successful
// call the context is detached from the caller's and ends drainGrace later;
// after a failed one it ends now.
func (c *callContext) end(success bool) {
	if c.detach != nil {
		c.detach()
	}
	if success {
		c.timer.Reset(drainGrace)
		return
	}
	c.timer.Stop()
	c.cancel(context.Canceled)
}
