package serve

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlehq/heddle/diag"
)

// CutWait bounds how long Shutdown waits, once its context is done, for the
// requests it cancelled to write their 503 SHUTTING_DOWN; a request still
// running then has its connection closed without an answer.
const CutWait = 2 * time.Second

// drainPoll is how often a drain looks whether the requests in flight have
// all been answered.
const drainPoll = 10 * time.Millisecond

// errDraining is the answer of /readyz during a drain.
var errDraining = diag.New(diag.ShuttingDown, "this worker is draining: it finishes the calls in flight and accepts no new connections")

// errCut is the cause of a request a drain cancelled, and its answer.
var errCut = diag.New(diag.ShuttingDown, "the worker shut down before this call finished: the call was cancelled; retry on another worker")

// drainState is what a Server knows of its drain: whether one began, its
// listeners, the requests in flight, and the context that cancels them
// when the drain is cut. Its methods are safe for concurrent use.
type drainState struct {
	started  atomic.Bool
	inFlight atomic.Int64
	cut      context.Context // cancelled, with errCut as its cause, by a cut
	cutCause context.CancelCauseFunc
	base     context.Context // cut, marked: the context Serve's requests start from

	mu        sync.Mutex
	listeners []net.Listener
}

func newDrainState() *drainState {
	d := &drainState{}
	d.cut, d.cutCause = context.WithCancelCause(context.Background())
	d.base = context.WithValue(d.cut, servedKey{}, true)
	return d
}

// servedKey marks the contexts of the requests Serve answers: they descend
// from the drain's cut already.
type servedKey struct{}

// cancel cuts the drain: every request in flight is cancelled, with errCut
// as the cause.
func (d *drainState) cancel() { d.cutCause(errCut) }

func (d *drainState) draining() bool { return d.started.Load() }

// add records a listener for Shutdown to close; it reports false once a
// drain has begun.
func (d *drainState) add(ln net.Listener) (net.Listener, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining() {
		ln.Close()
		return nil, false
	}
	d.listeners = append(d.listeners, ln)
	return ln, true
}

// begin starts the drain and closes the listeners.
func (d *drainState) begin() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.started.Store(true)
	var first error
	for _, ln := range d.listeners {
		if err := ln.Close(); err != nil && first == nil {
			first = err
		}
	}
	d.listeners = nil
	return first
}

// enter counts a request among those in flight until leave.
func (d *drainState) enter() { d.inFlight.Add(1) }

func (d *drainState) leave() { d.inFlight.Add(-1) }

// track returns r with a context that a cut cancels, with errCut as its
// cause. The caller calls done when it has answered. A request Serve
// answers has that context already (http.Server.BaseContext); one that
// reached the handler another way gets one of its own.
func (d *drainState) track(r *http.Request) (_ *http.Request, done func()) {
	if r.Context().Value(servedKey{}) != nil {
		return r, noop
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	stop := context.AfterFunc(d.cut, func() { cancel(errCut) })
	return r.WithContext(ctx), func() {
		stop()
		cancel(nil)
	}
}

func noop() {}

// wait waits until no request is in flight, and reports true, or until
// ctx is done, and reports false.
func (d *drainState) wait(ctx context.Context) bool {
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for d.inFlight.Load() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// Shutdown drains the server. At once it stops accepting connections, and
// /readyz answers 503 SHUTTING_DOWN; a connection already open is still
// served, each answer closing it (Connection: close), and idle ones are
// closed. When no request is left in flight and each answer is on the
// wire (within CutWait more), every connection is closed and Shutdown
// returns nil.
//
// When ctx is done first (a deadline, or a second signal), the drain is cut:
// the requests still running are cancelled, and each is answered 503
// SHUTTING_DOWN as soon as the runtime gives its call back; after CutWait
// every connection is closed, answered or not. Shutdown then returns an
// error with code SHUTTING_DOWN that says how many requests were cut.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.drain.begin()
	s.srv.SetKeepAlivesEnabled(false)
	// MCP sessions end now: their streams would hold the drain open.
	mcpClosed := s.closeMCP()
	defer waitMCP(mcpClosed)
	cut := !s.drain.wait(ctx)
	// From here on, what is left to answer has CutWait.
	wctx, cancel := context.WithTimeout(context.Background(), CutWait)
	defer cancel()
	if cut {
		n := s.drain.inFlight.Load()
		s.drain.cancel()
		s.drain.wait(wctx)
		err = diag.Wrap(diag.ShuttingDown, ctx.Err(), "the drain was cut with %d requests in flight: they were cancelled and answered SHUTTING_DOWN", n)
		s.metrics.Drained(true, int(n))
	} else {
		s.metrics.Drained(false, 0)
	}
	// A handler that has returned may not have its answer on the wire yet:
	// net/http writes the rest of it after ServeHTTP returns. The
	// connections are closed once each has (keep-alives are off, so each
	// closes after its answer), or when wctx ends.
	_ = s.srv.Shutdown(wctx)
	_ = s.srv.Close()
	// The probe listener (ServeProbes) answered throughout: /livez 200,
	// /readyz 503. It closes last.
	_ = s.probes.Close()
	return err
}
