package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlehq/heddle/diag"
)

// Generations holds the runtime a worker serves now, and the ones it
// served before while they drain: what a configuration reload swaps.
//
// Each call or listing takes the current runtime with Acquire and gives
// it back with the release function; Swap makes a new runtime current for
// every Acquire after it, at once, while a call already holding the old
// one finishes on it. The old one is closed when its last holder releases
// it — by reference count, with no timer — and closes only what the new
// one did not adopt (Reopen). So no call fails because of a reload: it
// runs on the generation it began on, whole.
//
//	gens := runtime.NewGenerations(rt)
//	defer gens.Close()
//	rt, release := gens.Acquire()
//	defer release()
//	ts, err := rt.Toolset(agent)
//
// Generations is safe for concurrent use; Acquire is two atomic
// operations.
type Generations struct {
	cur atomic.Pointer[generation]

	mu       sync.Mutex // serialises Swap and Close; guards failed and changed
	failed   *ReloadFailure
	closed   bool
	changed  chan struct{}  // closed by the next Swap, or by Close
	draining sync.WaitGroup // one per generation not closed yet
}

// generation is one runtime and its holders: the Generations while it is
// current, and every call that acquired it.
type generation struct {
	rt   *Runtime
	n    uint64
	refs atomic.Int64
	gens *Generations
}

// ReloadFailure is the last reload that failed: when, and the codes of
// why (the configuration's diagnostics, or the failures of opening it).
// It shows in /readyz's body until a reload succeeds.
type ReloadFailure struct {
	At    time.Time   `json:"at"`
	Codes []diag.Code `json:"codes"`
}

// NewGenerations returns a holder whose first generation, number 1, is
// rt. Close closes it.
func NewGenerations(rt *Runtime) *Generations {
	g := &Generations{changed: make(chan struct{})}
	g.cur.Store(g.newGeneration(rt, 1))
	return g
}

// Changed returns a channel that is closed when the current generation is
// replaced (Swap) or the holder is closed: what follows the current
// generation, such as a subscription to its events (Runtime.Watch), takes
// it before reading Current and starts again when it closes. After Close
// it returns nil: there is no generation to follow.
func (g *Generations) Changed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changed
}

func (g *Generations) newGeneration(rt *Runtime, n uint64) *generation {
	gen := &generation{rt: rt, n: n, gens: g}
	gen.refs.Store(1) // the holder's own, dropped when it is swapped out
	g.draining.Add(1) // done when the runtime is closed
	return gen
}

// Acquire returns the current runtime, held until release is called
// (exactly once). After Close it returns the closed runtime, whose calls
// answer SHUTTING_DOWN.
func (g *Generations) Acquire() (rt *Runtime, release func()) {
	for {
		gen := g.cur.Load()
		if gen.hold() {
			return gen.rt, gen.release
		}
		if g.cur.Load() == gen { // closed for good
			return gen.rt, func() {}
		}
	}
}

// hold takes a reference unless the generation is already done.
func (gen *generation) hold() bool {
	for {
		n := gen.refs.Load()
		if n == 0 {
			return false
		}
		if gen.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one closes the runtime.
func (gen *generation) release() {
	if gen.refs.Add(-1) != 0 {
		return
	}
	// Closing may wait for a child process to exit: not on a caller's
	// goroutine.
	go func() {
		defer gen.gens.draining.Done()
		_ = gen.rt.Close()
	}()
}

// Current returns the current runtime without holding it: for what does
// not call through it (its plan, its health).
func (g *Generations) Current() *Runtime { return g.cur.Load().rt }

// Generation is the number of the current generation: 1 for the runtime
// the holder was made with, one more for each Swap.
func (g *Generations) Generation() uint64 { return g.cur.Load().n }

// Swap makes rt the current runtime and returns its generation number.
// The runtime it replaces closes once its last call has ended. The last
// reload failure is forgotten: the configuration that failed is no longer
// the newest. After Close, Swap closes rt and returns 0.
func (g *Generations) Swap(rt *Runtime) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		_ = rt.Close()
		return 0
	}
	old := g.cur.Load()
	gen := g.newGeneration(rt, old.n+1)
	g.cur.Store(gen)
	g.failed = nil
	close(g.changed)
	g.changed = make(chan struct{})
	old.release()
	return gen.n
}

// Failed records a reload that failed, with the codes of why; the current
// generation goes on serving.
func (g *Generations) Failed(at time.Time, codes []diag.Code) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failed = &ReloadFailure{At: at.UTC().Truncate(time.Millisecond), Codes: codes}
}

// LastFailure is the last reload that failed since the last one that
// succeeded, or nil.
func (g *Generations) LastFailure() *ReloadFailure {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failed
}

// Health is the current runtime's report, with the generation, the
// plan's hash and the last failed reload.
func (g *Generations) Health() Report {
	gen := g.cur.Load()
	r := gen.rt.Health()
	r.Generation, r.PlanHash, r.LastReloadError = gen.n, gen.rt.PlanHash(), g.LastFailure()
	return r
}

// Recheck re-checks the current runtime's dependencies (Runtime.Recheck).
func (g *Generations) Recheck(ctx context.Context) { g.Current().Recheck(ctx) }

// Close closes the current runtime once its last call has ended, and
// waits until every generation is closed. It is idempotent.
func (g *Generations) Close() error {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		close(g.changed)
		g.changed = nil
		g.cur.Load().release()
	}
	g.mu.Unlock()
	g.draining.Wait()
	return nil
}
