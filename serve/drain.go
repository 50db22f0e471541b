package serve

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/heddlehq/heddle/diag"
)

// CutWait bounds how long Shutdown waits, once its context is done, for the
// requests it cancelled to write their 503 SHUTTING_DOWN; a request still
// running then has its connection closed without an answer.
const CutWait = 2 * time.Second

// errDraining is the answer of /readyz during a drain.
var errDraining = diag.New(diag.ShuttingDown, "this worker is draining: it finishes the calls in flight and accepts no new connections")

// errCut is the cause of a request a drain cancelled, and its answer.
var errCut = diag.New(diag.ShuttingDown, "the worker shut down before this call finished: the call was cancelled; retry on another worker")

// drainState is what a Server knows of its drain: whether one began, the
// requests in flight, and the context that cancels them when it is cut.
type drainState struct {
	started  *atomic.Bool
	inFlight *atomic.Int64
	cut      context.Context
	cancel   context.CancelFunc
}

func newDrainState() drainState {
	cut, cancel := context.WithCancel(context.Background())
	return drainState{started: new(atomic.Bool), inFlight: new(atomic.Int64), cut: cut, cancel: cancel}
}

func (d drainState) draining() bool { return d.started.Load() }

// track counts r among the requests in flight and returns it with a
// context that a cut cancels, with errCut as its cause. The caller calls
// done when it has answered.
func (d drainState) track(r *http.Request) (*http.Request, func()) {
	d.inFlight.Add(1)
	ctx, cancel := context.WithCancelCause(r.Context())
	stop := context.AfterFunc(d.cut, func() { cancel(errCut) })
	return r.WithContext(ctx), func() {
		stop()
		cancel(nil)
		d.inFlight.Add(-1)
	}
}

// Shutdown drains the server. From its start /readyz answers 503
// SHUTTING_DOWN (on connections already open: no new one is accepted),
// idle connections are closed, and it waits until every request in flight
// has been answered. It returns nil when they all were before ctx is done.
//
// When ctx is done first (a deadline, or a second signal), the drain is cut:
// the requests still running are cancelled, and each is answered 503
// SHUTTING_DOWN as soon as the runtime gives its call back; after CutWait
// every connection is closed. Shutdown then returns an error with code
// SHUTTING_DOWN that says how many requests were cut (nil when none was:
// only connections that had sent no request were left).
func (s *Server) Shutdown(ctx context.Context) error {
	s.drain.started.Store(true)
	err := s.srv.Shutdown(ctx)
	if ctx.Err() == nil {
		return err
	}
	n := s.drain.inFlight.Load()
	s.drain.cancel()
	wctx, cancel := context.WithTimeout(context.Background(), CutWait)
	defer cancel()
	if s.srv.Shutdown(wctx) != nil && wctx.Err() != nil {
		_ = s.srv.Close()
	}
	if n == 0 {
		return nil // only connections that sent no request were open
	}
	return diag.Wrap(diag.ShuttingDown, ctx.Err(), "the drain was cut with %d requests in flight: they were cancelled and answered SHUTTING_DOWN", n)
}
