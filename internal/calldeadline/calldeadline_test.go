package calldeadline

import (
	"context"
	"errors"
	"testing"
	"time"
)

// done reports whether ctx has ended within d (at once, for 0).
func done(ctx context.Context, d time.Duration) bool {
	if d == 0 {
		return ctx.Err() != nil
	}
	select {
	case <-ctx.Done():
		return true
	case <-time.After(d):
		return false
	}
}

// TestCallContext: a call's context ends at its deadline (DeadlineExceeded,
// expired) or with its caller's (the caller's error, not expired), derived
// contexts end with it, and end either cancels it at once or, after a
// success that lingers, detaches it from the caller and ends it drainGrace
// later.
func TestCallContext(t *testing.T) {
	t.Parallel()
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		dl := time.Now().Add(50 * time.Millisecond)
		c := newCallContext(context.Background(), dl)
		defer c.end(false)
		child, cancel := context.WithCancel(c)
		defer cancel()
		if d, ok := c.Deadline(); !ok || !d.Equal(dl) {
			t.Errorf("Deadline = %v, %v; want %v", d, ok, dl)
		}
		if c.Err() != nil || Expired(c) {
			t.Fatal("ended before its deadline")
		}
		if !done(child, 2*time.Second) {
			t.Fatal("a derived context did not end at the deadline")
		}
		if !errors.Is(c.Err(), context.DeadlineExceeded) || !Expired(c) {
			t.Errorf("Err = %v, expired = %v; want DeadlineExceeded, true", c.Err(), Expired(c))
		}
	})
	t.Run("caller-cancels", func(t *testing.T) {
		t.Parallel()
		parent, cancel := context.WithCancel(context.Background())
		c := newCallContext(parent, time.Now().Add(time.Minute))
		defer c.end(false)
		cancel()
		if !done(c, 2*time.Second) {
			t.Fatal("the caller's cancellation did not reach the call")
		}
		if !errors.Is(c.Err(), context.Canceled) || Expired(c) {
			t.Errorf("Err = %v, expired = %v; want Canceled, false", c.Err(), Expired(c))
		}
	})
	t.Run("caller-deadline", func(t *testing.T) {
		t.Parallel()
		parent, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		c := newCallContext(parent, time.Now().Add(time.Minute))
		defer c.end(false)
		if !done(c, 2*time.Second) {
			t.Fatal("the caller's deadline did not reach the call")
		}
		if !errors.Is(c.Err(), context.DeadlineExceeded) || Expired(c) {
			t.Errorf("Err = %v, expired = %v; want DeadlineExceeded, false", c.Err(), Expired(c))
		}
	})
	t.Run("end", func(t *testing.T) {
		t.Parallel()
		c := newCallContext(context.Background(), time.Now().Add(time.Minute))
		c.end(false)
		if !done(c, 0) || !errors.Is(c.Err(), context.Canceled) || Expired(c) {
			t.Errorf("end(false): Err = %v; want Canceled at once", c.Err())
		}
		s := New(context.Background(), time.Now().Add(time.Minute), false)
		s.End(true)
		if !done(s.Context(), 0) || Expired(s.Context()) {
			t.Errorf("a plain scope's end(true): Err = %v; want Canceled at once", s.Context().Err())
		}
	})
	t.Run("plain", func(t *testing.T) {
		t.Parallel()
		s := New(context.Background(), time.Now().Add(20*time.Millisecond), false)
		defer s.End(false)
		if s.lc != nil || !done(s.Context(), 2*time.Second) || !Expired(s.Context()) || !errors.Is(s.Context().Err(), context.DeadlineExceeded) {
			t.Errorf("own deadline: lc = %v, Err = %v, expired = %v", s.lc, s.Context().Err(), Expired(s.Context()))
		}
		parent, pcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer pcancel()
		s = New(parent, time.Now().Add(time.Minute), false)
		defer s.End(false)
		if !done(s.Context(), 2*time.Second) || Expired(s.Context()) {
			t.Errorf("caller's deadline: Err = %v, expired = %v", s.Context().Err(), Expired(s.Context()))
		}
	})
	t.Run("linger", func(t *testing.T) {
		t.Parallel()
		parent, cancel := context.WithCancel(context.Background())
		s := New(parent, time.Now().Add(time.Minute), true)
		c := s.lc
		start := time.Now()
		s.End(true)
		cancel() // detached: the caller ending no longer reaches it
		if done(c, drainGrace/2) {
			t.Fatalf("a lingering context ended after %v", time.Since(start))
		}
		if !done(c, 3*drainGrace) {
			t.Fatal("a lingering context outlived its grace")
		}
		if d := time.Since(start); d < drainGrace {
			t.Errorf("ended after %v, want %v", d, drainGrace)
		}
	})
}
