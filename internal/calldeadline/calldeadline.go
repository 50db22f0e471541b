// Package calldeadline gives one tool call its context: a deadline, and, for
// calls whose transport reads on after handing over the result, a moment's
// grace after a success.
//
// A caller makes one Scope per call and ends it when the call returns:
//
//	s := calldeadline.New(ctx, time.Now().Add(timeout), overHTTP)
//	res, err := session.CallTool(s.Context(), params)
//	s.End(err == nil)
//	if calldeadline.Expired(s.Context()) {
//		// the call's own deadline ended it, not the caller's
//	}
package calldeadline

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Scope is the context one call runs under and how to end it. A Scope is
// used by one call: Context may be read from any goroutine, End is called
// once, by the caller, when the call has returned.
type Scope struct {
	ctx    context.Context
	cancel context.CancelFunc // the plain context's
	lc     *callContext       // the lingering one's
}

// New returns the scope of one call ending at deadline or when parent
// ends, whichever comes first. With linger unset its context is
// context.WithDeadlineCause's; with linger set it is a callContext, which a
// successful call leaves running for a second (see callContext).
func New(parent context.Context, deadline time.Time, linger bool) Scope {
	if !linger {
		ctx, cancel := context.WithDeadlineCause(parent, deadline, errCallDeadline)
		return Scope{ctx: ctx, cancel: cancel}
	}
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	lc := newCallContext(parent, deadline)
	return Scope{ctx: lc, lc: lc}
}

// Context returns the context the call runs under.
func (s Scope) Context() context.Context { return s.ctx }

// End ends the scope once the call has returned; success says whether the
// call succeeded, which lets a lingering context run on for a moment.
func (s Scope) End(success bool) {
	if s.lc != nil {
		s.lc.end(success)
		return
	}
	s.cancel()
}

// Expired reports whether ctx, the context of a Scope, ended at the scope's
// own deadline rather than with its caller's context.
func Expired(ctx context.Context) bool { return context.Cause(ctx) == errCallDeadline }

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

// errCallDeadline is the cause of a call's context whose deadline passed.
var errCallDeadline = fmt.Errorf("the call's deadline passed: %w", context.DeadlineExceeded)

// drainGrace is how long a successful call's context lingers for the SDK to
// finish reading its response.
const drainGrace = time.Second

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
