package driver

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Supervisor brings one dependency back — an MCP server's session, a
// database's pool, a remote agent's card — after it failed at start-up or
// dropped later. Every kind uses it, so every dependency recovers the same
// way. Wake is all a kind calls, whenever it finds the dependency down:
//
//   - With no attempts running, Wake starts them: the first at once, then
//     with capped, jittered exponential backoff, until one succeeds or the
//     runtime closes. One supervisor runs one loop, however many call Wake.
//   - While the loop waits out its backoff, Wake makes the next attempt now
//     (but never sooner than WakeEvery after the last one), so a dependency
//     that is back serves the caller's next call: backoff paces attempts;
//     it never makes a caller wait for a dependency that is reachable.
//   - A Wake during an attempt is kept: after a failed attempt the next one
//     follows without backoff, and after a successful one the loop makes
//     one more rather than end, so a loss just after a reconnect is never
//     missed. An attempt therefore returns nil at once when the dependency
//     is already up. Wakes that came before an attempt began are served by
//     it.
//
// A caller that cannot go on without the dependency calls Recheck instead
// of Wake: it wakes the loop and waits, within its context, for the attempt
// that brings the dependency back or reports it still down. Concurrent
// callers share that attempt.
//
// A Supervisor is safe for concurrent use. Its loop ends when an attempt
// succeeds or its context (the runtime's closing context) is done; Wait
// waits for that.
type Supervisor struct {
	attempt   func(ctx context.Context) error
	ctx       context.Context
	first     time.Duration
	max       time.Duration
	wakeEvery time.Duration

	mu      sync.Mutex
	running bool
	wake    chan struct{} // buffered 1: a wake-up the loop has not seen yet
	wg      sync.WaitGroup
	begun   uint64        // attempts begun
	ended   uint64        // attempts ended
	upAt    uint64        // the number of the last attempt that succeeded
	lastErr error         // the error of the last attempt ended
	endCh   chan struct{} // closed, and replaced, when an attempt ends or the loop stops
}

// SupervisorOptions configure a Supervisor; the zero value gives the
// defaults.
type SupervisorOptions struct {
	// First is the backoff before the second attempt; default 100ms.
	First time.Duration
	// Max caps the backoff; default 30s.
	Max time.Duration
	// WakeEvery is the shortest time between two attempts that a Wake
	// may bring forward; default First.
	WakeEvery time.Duration
}

// The default backoff bounds.
const (
	DefaultBackoffFirst = 100 * time.Millisecond
	DefaultBackoffMax   = 30 * time.Second
)

// RecheckWait bounds how long a call that finds its dependency down waits
// for the supervisor's re-check (Supervisor.Recheck) before it is refused:
// long enough for a dependency that is back to reconnect, short enough that
// one that is still away does not hold the call up.
const RecheckWait = time.Second

// NewSupervisor returns a supervisor whose attempts call attempt with ctx
// (done when the runtime closes); attempt returns nil once the dependency is
// up. It starts nothing until the first Wake.
func NewSupervisor(ctx context.Context, attempt func(ctx context.Context) error, opts *SupervisorOptions) *Supervisor {
	s := &Supervisor{attempt: attempt, ctx: ctx, first: DefaultBackoffFirst, max: DefaultBackoffMax,
		wake: make(chan struct{}, 1), endCh: make(chan struct{})}
	if opts != nil {
		if opts.First > 0 {
			s.first = opts.First
		}
		if opts.Max > 0 {
			s.max = opts.Max
		}
		s.wakeEvery = opts.WakeEvery
	}
	s.max = max(s.max, s.first)
	if s.wakeEvery <= 0 {
		s.wakeEvery = s.first
	}
	return s
}

// Wake says the dependency is down: it starts attempts when none run, and
// otherwise asks the running loop for one now. It does nothing once the
// context is done.
func (s *Supervisor) Wake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return
	}
	if s.running {
		select {
		case s.wake <- struct{}{}:
		default: // one is pending already
		}
		return
	}
	s.running = true
	select { // a wake-up left from a loop before is for attempts made
	case <-s.wake:
	default:
	}
	s.wg.Add(1)
	go s.loop()
}

// Recheck wakes the loop, as Wake does, and waits until the dependency has
// been brought back by an attempt that ended after the call, or an attempt
// that began after the call has ended, or ctx or the supervisor's own
// context is done. It returns nil when the dependency was brought back, and
// otherwise the error of the last attempt, or the context's. Callers that
// find the dependency down at the same time share one attempt, and the
// supervisor's pacing (WakeEvery) still applies: bound ctx (RecheckWait)
// so that a dependency that is still away does not hold a call up.
func (s *Supervisor) Recheck(ctx context.Context) error {
	s.mu.Lock()
	want, from := s.begun+1, s.ended
	s.mu.Unlock()
	s.Wake()
	for {
		s.mu.Lock()
		up, ended, err, ch := s.upAt > from, s.ended >= want, s.lastErr, s.endCh
		s.mu.Unlock()
		switch {
		case up:
			return nil
		case ended:
			return err
		case s.ctx.Err() != nil:
			return s.ctx.Err()
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
	}
}

// Running reports whether attempts are being made.
func (s *Supervisor) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// Wait waits until the loop, if one runs, has ended.
func (s *Supervisor) Wait() { s.wg.Wait() }

func (s *Supervisor) loop() {
	defer s.wg.Done()
	delay := s.first
	for {
		if s.ctx.Err() != nil {
			s.stop()
			return
		}
		last := time.Now()
		s.begin()
		err := s.attempt(s.ctx)
		s.end(err)
		if err == nil && s.done() {
			return
		}
		if !s.pause(delay, last) {
			s.stop()
			return
		}
		delay = min(2*delay, s.max)
	}
}

// begin counts an attempt about to be made; a wake-up already pending is
// for this attempt, which begins after it.
func (s *Supervisor) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.begun++
	select {
	case <-s.wake:
	default:
	}
}

// end records an attempt's outcome and tells the callers waiting in
// Recheck.
func (s *Supervisor) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended++
	s.lastErr = err
	if err == nil {
		s.upAt = s.ended
	}
	close(s.endCh)
	s.endCh = make(chan struct{})
}

// done ends the loop after a successful attempt, unless a Wake came during
// it.
func (s *Supervisor) done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.wake:
		return false
	default:
		s.running = false
		return true
	}
}

// pause waits out the backoff after an attempt that began at last: half of
// delay for sure and the other half at random, so workers that lost the
// same dependency do not come back in step. A Wake ends it early, though
// not before wakeEvery has passed since last. It reports false when the
// context is done.
func (s *Supervisor) pause(delay time.Duration, last time.Time) bool {
	t := time.NewTimer(delay/2 + rand.N(delay/2+1))
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
		return true
	case <-s.wake:
	}
	if wait := s.wakeEvery - time.Since(last); wait > 0 {
		t.Reset(wait)
		select {
		case <-s.ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

func (s *Supervisor) stop() {
	s.mu.Lock()
	s.running = false
	s.mu.Unlock()
}
