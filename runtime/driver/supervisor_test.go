package driver

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

var errDown = errors.New("down")

// attempts records when a supervisor's attempts were made, failing the
// first fail of them.
type attempts struct {
	mu   sync.Mutex
	at   []time.Duration
	t0   time.Time
	fail int
}

func (a *attempts) attempt(context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.at = append(a.at, time.Since(a.t0))
	if len(a.at) <= a.fail {
		return errDown
	}
	return nil
}

func (a *attempts) times() []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Duration(nil), a.at...)
}

// TestSupervisorBackoff: the first attempt is at once; each wait after a
// failure lies within [d/2, d] of a delay that doubles from First up to Max;
// the loop ends at the first success.
func TestSupervisorBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &attempts{t0: time.Now(), fail: 7}
		s := NewSupervisor(t.Context(), a.attempt, &SupervisorOptions{First: 100 * time.Millisecond, Max: 800 * time.Millisecond})
		s.Wake()
		s.Wait()
		at := a.times()
		if len(at) != 8 {
			t.Fatalf("%d attempts, want 8 (7 failures, then success)", len(at))
		}
		if at[0] != 0 {
			t.Errorf("first attempt after %v, want at once", at[0])
		}
		delay := 100 * time.Millisecond
		for i := 1; i < len(at); i++ {
			if gap := at[i] - at[i-1]; gap < delay/2 || gap > delay {
				t.Errorf("wait before attempt %d = %v, want within [%v, %v]", i+1, gap, delay/2, delay)
			}
			delay = min(2*delay, 800*time.Millisecond)
		}
		if s.Running() {
			t.Error("still running after a success")
		}
	})
}

// TestSupervisorSingleFlight: however many callers find the dependency
// down, one loop runs and one attempt at a time; the wakes that came during
// the attempt make one more, so a loss right after it is not missed.
func TestSupervisorSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inFlight, most, total atomic.Int32
		release := make(chan struct{})
		s := NewSupervisor(t.Context(), func(context.Context) error {
			total.Add(1)
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			if n > most.Load() {
				most.Store(n)
			}
			<-release
			return nil
		}, nil)
		for range 50 {
			go s.Wake()
		}
		synctest.Wait()
		close(release)
		s.Wait()
		if most.Load() != 1 || total.Load() > 2 {
			t.Errorf("%d attempts, at most %d at once; want at most 2, and 1", total.Load(), most.Load())
		}
		if s.Running() {
			t.Error("still running after a success")
		}
	})
}

// TestSupervisorWakeAfterSuccess: a Wake while the successful attempt is in
// flight — the dependency was lost again — makes one more attempt.
func TestSupervisorWakeAfterSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var n atomic.Int32
		s := NewSupervisor(t.Context(), func(context.Context) error {
			if n.Add(1) == 1 {
				<-release
			}
			return nil
		}, nil)
		s.Wake()
		synctest.Wait()
		s.Wake() // lost again during the reconnect
		close(release)
		s.Wait()
		if n.Load() != 2 {
			t.Errorf("%d attempts, want 2", n.Load())
		}
	})
}

// TestSupervisorWake: a caller that finds the dependency down gets an
// attempt now, not when the backoff would have made one; wakes during an
// attempt in flight coalesce into one more attempt right after it.
func TestSupervisorWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &attempts{t0: time.Now(), fail: 3}
		release := make(chan struct{})
		var n atomic.Int32
		s := NewSupervisor(t.Context(), func(ctx context.Context) error {
			if n.Add(1) == 2 {
				<-release // the second attempt is slow
			}
			return a.attempt(ctx)
		}, &SupervisorOptions{First: 10 * time.Second, Max: 10 * time.Second, WakeEvery: 500 * time.Millisecond})
		s.Wake()
		synctest.Wait() // the first attempt failed; the loop waits 5–10 s
		time.Sleep(time.Second)
		s.Wake()
		synctest.Wait() // the second attempt, at 1 s, is in flight
		for range 5 {
			s.Wake()
		}
		close(release)
		synctest.Wait() // it fails; the five wakes make one attempt, WakeEvery after it
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		if at := a.times(); len(at) != 3 || at[1] != time.Second || at[2] != 1500*time.Millisecond {
			t.Fatalf("attempts at %v, want [0s 1s 1.5s]", at)
		}
		s.Wait() // the fourth, after the backoff, succeeds
		at := a.times()
		if len(at) != 4 || at[3]-at[2] < 5*time.Second {
			t.Fatalf("attempts at %v, want a fourth after the backoff", at)
		}
	})
}

// TestSupervisorWakeEvery: callers that keep finding a dead dependency
// down do not make attempts more often than WakeEvery.
func TestSupervisorWakeEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		a := &attempts{t0: time.Now(), fail: 1 << 30}
		s := NewSupervisor(ctx, a.attempt, &SupervisorOptions{First: 10 * time.Second, Max: 10 * time.Second, WakeEvery: time.Second})
		for range 50 { // a caller every 100 ms for 5 s
			s.Wake()
			time.Sleep(100 * time.Millisecond)
		}
		at := a.times()
		if len(at) < 5 || len(at) > 6 {
			t.Errorf("%d attempts in 5 s of wakes, want 5 or 6: %v", len(at), at)
		}
		for i := 1; i < len(at); i++ {
			if at[i]-at[i-1] < time.Second {
				t.Errorf("attempts %v and %v closer than WakeEvery", at[i-1], at[i])
			}
		}
		cancel()
		s.Wait()
	})
}

// TestSupervisorStopsWhenClosed: closing the runtime ends the loop in its
// backoff, and a Wake after that starts nothing.
func TestSupervisorStopsWhenClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		a := &attempts{t0: time.Now(), fail: 1 << 30}
		s := NewSupervisor(ctx, a.attempt, &SupervisorOptions{First: time.Minute})
		s.Wake()
		synctest.Wait()
		cancel()
		s.Wait()
		s.Wake()
		if s.Running() {
			t.Error("running after close")
		}
		if n := len(a.times()); n != 1 {
			t.Errorf("%d attempts, want 1", n)
		}
	})
}

// TestSupervisorRecheck: a caller that finds the dependency down in the
// middle of a long backoff gets an attempt now and its outcome: the
// attempt's error while the dependency is away, nil once it is back —
// at once, not when the backoff would have tried. Callers that come while
// an attempt is in flight share it.
func TestSupervisorRecheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var up atomic.Bool
		hold := make(chan struct{})
		a := &attempts{t0: time.Now()}
		s := NewSupervisor(ctx, func(ctx context.Context) error {
			if up.Load() {
				<-hold
			}
			_ = a.attempt(ctx)
			if up.Load() {
				return nil
			}
			return errDown
		}, &SupervisorOptions{First: 20 * time.Second, Max: 20 * time.Second, WakeEvery: 100 * time.Millisecond})
		s.Wake()
		synctest.Wait() // the first attempt failed; the loop waits 10–20 s
		time.Sleep(time.Second)

		if err := s.Recheck(t.Context()); !errors.Is(err, errDown) {
			t.Fatalf("Recheck while down = %v, want the attempt's error", err)
		}
		if at := a.times(); len(at) != 2 || at[1] != time.Second {
			t.Fatalf("attempts at %v, want [0s 1s]", at)
		}

		time.Sleep(time.Second)
		up.Store(true)
		start := time.Now()
		errs := make(chan error, 10)
		for range 10 {
			go func() { errs <- s.Recheck(t.Context()) }()
		}
		synctest.Wait() // one attempt in flight, ten callers waiting for it
		close(hold)
		for range 10 {
			if err := <-errs; err != nil {
				t.Errorf("Recheck once back = %v", err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Recheck once back took %v, want at once (WakeEvery had passed)", d)
		}
		if at := a.times(); len(at) != 3 {
			t.Errorf("attempts at %v: ten callers, want one attempt between them", at)
		}
	})
}

// TestSupervisorRecheckPaced: a Recheck within WakeEvery of the last
// attempt waits for WakeEvery to pass; its context bounds the wait, and a
// closed supervisor answers at once.
func TestSupervisorRecheckPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		a := &attempts{t0: time.Now(), fail: 1 << 30}
		s := NewSupervisor(ctx, a.attempt, &SupervisorOptions{First: time.Minute, WakeEvery: 500 * time.Millisecond})
		s.Wake()
		synctest.Wait()
		start := time.Now()
		if err := s.Recheck(t.Context()); !errors.Is(err, errDown) || time.Since(start) != 500*time.Millisecond {
			t.Errorf("Recheck = %v after %v, want the attempt's error after 500ms", err, time.Since(start))
		}
		short, stop := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer stop()
		if err := s.Recheck(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Recheck with a short context = %v, want its deadline", err)
		}
		cancel()
		s.Wait()
		if err := s.Recheck(t.Context()); !errors.Is(err, context.Canceled) {
			t.Errorf("Recheck once closed = %v, want the supervisor's context error", err)
		}
	})
}
