// Package calldeadline gives one tool call its context: a deadline, and a
// way to tell the call's own deadline from its caller's.
//
// A caller makes one Scope per call and ends it when the call returns:
//
//	s := calldeadline.New(ctx, time.Now().Add(timeout))
//	res, err := source.Call(s.Context(), ...)
//	s.End()
//	if calldeadline.Expired(s.Context()) {
//		// the call's own deadline ended it, not the caller's
//	}
//
// Every transport reads the whole of a call's answer before the call
// returns (over Streamable HTTP, the rest of an event stream is read, within
// a bound, before the result is handed over), so a scope ends with its call,
// and its timer never fires after a call that returned in time.
package calldeadline

import (
	"context"
	"fmt"
	"time"
)

// Scope is the context one call runs under and how to end it. A Scope is
// used by one call: Context may be read from any goroutine, End is called
// once, by the caller, when the call has returned.
type Scope struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// New returns the scope of one call ending at deadline or when parent
// ends, whichever comes first.
func New(parent context.Context, deadline time.Time) Scope {
	ctx, cancel := context.WithDeadlineCause(parent, deadline, errCallDeadline)
	return Scope{ctx: ctx, cancel: cancel}
}

// Context returns the context the call runs under.
func (s Scope) Context() context.Context { return s.ctx }

// End ends the scope once the call has returned: its context is cancelled
// and its timer stopped.
func (s Scope) End() { s.cancel() }

// Expired reports whether ctx, the context of a Scope, ended at the scope's
// own deadline rather than with its caller's context.
func Expired(ctx context.Context) bool { return context.Cause(ctx) == errCallDeadline }

// errCallDeadline is the cause of a call's context whose deadline passed.
var errCallDeadline = fmt.Errorf("the call's deadline passed: %w", context.DeadlineExceeded)
