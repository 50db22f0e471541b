package runtime

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
		defer c.end(false, false)
		child, cancel := context.WithCancel(c)
		defer cancel()
		if d, ok := c.Deadline(); !ok || !d.Equal(dl) {
			t.Errorf("Deadline = %v, %v; want %v", d, ok, dl)
		}
		if c.Err() != nil || expired(c) {
			t.Fatal("ended before its deadline")
		}
		if !done(child, 2*time.Second) {
			t.Fatal("a derived context did not end at the deadline")
		}
		if !errors.Is(c.Err(), context.DeadlineExceeded) || !expired(c) {
			t.Errorf("Err = %v, expired = %v; want DeadlineExceeded, true", c.Err(), expired(c))
		}
	})
	t.Run("caller-cancels", func(t *testing.T) {
		t.Parallel()
		parent, cancel := context.WithCancel(context.Background())
		c := newCallContext(parent, time.Now().Add(time.Minute))
		defer c.end(false, false)
		cancel()
		if !done(c, 2*time.Second) {
			t.Fatal("the caller's cancellation did not reach the call")
		}
		if !errors.Is(c.Err(), context.Canceled) || expired(c) {
			t.Errorf("Err = %v, expired = %v; want Canceled, false", c.Err(), expired(c))
		}
	})
	t.Run("caller-deadline", func(t *testing.T) {
		t.Parallel()
		parent, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		c := newCallContext(parent, time.Now().Add(time.Minute))
		defer c.end(false, false)
		if !done(c, 2*time.Second) {
			t.Fatal("the caller's deadline did not reach the call")
		}
		if !errors.Is(c.Err(), context.DeadlineExceeded) || expired(c) {
			t.Errorf("Err = %v, expired = %v; want DeadlineExceeded, false", c.Err(), expired(c))
		}
	})
	t.Run("end", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ success, linger bool }{{false, false}, {false, true}, {true, false}} {
			c := newCallContext(context.Background(), time.Now().Add(time.Minute))
			c.end(tc.success, tc.linger)
			if !done(c, 0) || !errors.Is(c.Err(), context.Canceled) || expired(c) {
				t.Errorf("end(%v, %v): Err = %v; want Canceled at once", tc.success, tc.linger, c.Err())
			}
		}
	})
	t.Run("plain", func(t *testing.T) {
		t.Parallel()
		ctx, cancel, lc := callDeadline(context.Background(), time.Now().Add(20*time.Millisecond), false)
		defer cancel()
		if lc != nil || !done(ctx, 2*time.Second) || !expired(ctx) || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Errorf("own deadline: lc = %v, Err = %v, expired = %v", lc, ctx.Err(), expired(ctx))
		}
		parent, pcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer pcancel()
		ctx, cancel, _ = callDeadline(parent, time.Now().Add(time.Minute), false)
		defer cancel()
		if !done(ctx, 2*time.Second) || expired(ctx) {
			t.Errorf("caller's deadline: Err = %v, expired = %v", ctx.Err(), expired(ctx))
		}
	})
	t.Run("linger", func(t *testing.T) {
		t.Parallel()
		parent, cancel := context.WithCancel(context.Background())
		c := newCallContext(parent, time.Now().Add(time.Minute))
		start := time.Now()
		c.end(true, true)
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
