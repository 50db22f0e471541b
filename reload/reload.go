// Package reload reloads a running configuration without a restart: it
// loads and compiles the configuration again, opens the plan as the next
// generation of a [runtime.Generations] with [runtime.Reopen] — which keeps
// every server whose connection did not change, its process and session
// included — and swaps it in. A call runs on the generation it began on,
// so none fails because of a reload. A configuration with errors, or one
// that cannot be opened, changes nothing: the live generation goes on
// serving, and the failure's codes are logged, recorded in the
// Generations (its health report's last_reload_error, /readyz's body in
// heddle serve) and handed to Options.OnReload.
//
// It is what heddle serve reloads with, on SIGHUP and with --watch; an
// application serving its own front door over a Generations reloads the
// same way:
//
//	gens := runtime.NewGenerations(rt)
//	defer gens.Close()
//	r := reload.New(gens, compileConfig, &reload.Options{Logger: log, OnReload: m.Reloaded})
//	hup := make(chan os.Signal, 1)
//	signal.Notify(hup, syscall.SIGHUP)
//	stop := r.Start(ctx, hup, &reload.Watch{Config: "config/api.yaml", Agents: "agents"})
//	defer stop()
//
// where compileConfig loads and compiles the configuration as start-up did
// (config.Load, then compile.Compile). [Reloader.Reload] reloads at once,
// for a reload the application asks for itself.
package reload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
)

// Options are what a Reloader needs besides its Generations and how to
// compile. A nil *Options is the zero value; each field's zero value has
// the default its comment gives.
type Options struct {
	// Runtime returns the options the next generation is opened with. It
	// is called at each reload, so that what it reads may have changed
	// since start-up (heddle serve reads its lock file again). Default:
	// the zero runtime.Options.
	Runtime func(ctx context.Context) (runtime.Options, error)
	// Logger receives a line for each reload: INFO "configuration
	// reloaded" with the generation, its plan's hash and how long it took,
	// or ERROR "reload failed" with the codes and the error; WARN for each
	// warning of the configuration, and for a serve: section that changed.
	// Default: discard.
	Logger *slog.Logger
	// OnReload is called after each attempt, with nil when it succeeded
	// and its error when it did not; metrics.Metrics.Reloaded counts them.
	// Default: none.
	OnReload func(err error)
}

// Reloader reloads a configuration into a Generations, one attempt at a
// time. It is safe for concurrent use: a Reload asked for while another
// runs waits for it, and then reads the files as they are.
type Reloader struct {
	gens    *runtime.Generations
	compile func() (*plan.Plan, diag.Diagnostics)
	opts    Options
	log     *slog.Logger
	serve   []byte // the serve: section at New, which holds until a restart

	mu sync.Mutex // one reload at a time
}

// New returns a Reloader of gens. compile loads and compiles the
// configuration as start-up did: a nil plan fails the reload with the
// errors among its diagnostics; the warnings of a plan are logged. opts
// may be nil.
func New(gens *runtime.Generations, compile func() (*plan.Plan, diag.Diagnostics), opts *Options) *Reloader {
	r := &Reloader{gens: gens, compile: compile}
	if opts != nil {
		r.opts = *opts
	}
	r.log = r.opts.Logger
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.serve, _ = json.Marshal(gens.Current().Plan().Serve)
	return r
}

// Reload makes one attempt: it compiles the configuration, opens it from
// the current generation and swaps it in. Its error carries the codes of
// why the live generation was kept (diag.CodeOf reads the first); the
// Generations records them until a reload succeeds. A plan whose serve:
// section differs from the one at New is swapped in with a warning: a
// front door reads its listener, auth, hosts and limits once, so they
// change at the next start.
func (r *Reloader) Reload(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := time.Now()
	rt, err := r.open(ctx)
	if err != nil {
		codes := errCodes(err)
		r.gens.Failed(start, codes)
		if r.opts.OnReload != nil {
			r.opts.OnReload(err)
		}
		r.log.Error("reload failed: the running configuration goes on serving", "generation", r.gens.Generation(), "codes", codesText(codes), "error", err.Error())
		return err
	}
	if b, _ := json.Marshal(rt.Plan().Serve); !bytes.Equal(b, r.serve) {
		r.log.Warn("the serve: section changed; it takes effect at the next start (listen, auth, hosts and limits are read once)")
	}
	n := r.gens.Swap(rt)
	if r.opts.OnReload != nil {
		r.opts.OnReload(nil)
	}
	r.log.Info("configuration reloaded", "generation", n, "plan_hash", rt.PlanHash(), "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// open compiles the configuration and opens it from the live runtime.
func (r *Reloader) open(ctx context.Context) (*runtime.Runtime, error) {
	p, ds := r.compile()
	if p == nil {
		if err := ds.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("reload: compile returned neither a plan nor an error")
	}
	for _, d := range ds {
		r.log.Warn("configuration warning", "code", d.Code, "diagnostic", d.Error())
	}
	var opts runtime.Options
	if r.opts.Runtime != nil {
		var err error
		if opts, err = r.opts.Runtime(ctx); err != nil {
			return nil, err
		}
	}
	return runtime.Reopen(ctx, p, opts, r.gens.Current())
}

// Start reloads in the background until ctx is done or stop is called: at
// each signal received on hup (SIGHUP, as signal.Notify delivers it; nil
// for none), and, when watch is not nil, after the files it names change
// and WatchDebounce of quiet. A signal or a change during a reload asks
// for one more after it, however many come. stop ends the reloads and
// waits for one in flight; call it once.
//
// A watch that cannot start is logged at WARN and left out: signals still
// reload.
func (r *Reloader) Start(ctx context.Context, hup <-chan os.Signal, watch *Watch) (stop func()) {
	trigger := make(chan struct{}, 1)
	ask := func() {
		select {
		case trigger <- struct{}{}:
		default: // one is pending: it reads the files as they are then
		}
	}
	var w *watcher
	if watch != nil {
		var err error
		if w, err = startWatch(*watch, r.log, ask); err != nil {
			r.log.Warn("cannot watch the configuration; SIGHUP still reloads", "error", err.Error())
		}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-hup:
				r.log.Info("SIGHUP: reloading the configuration")
				ask()
			case <-trigger:
				_ = r.Reload(ctx)
			case <-quit:
				return
			case <-ctx.Done():
				return
			}
		}
	})
	return func() {
		if w != nil {
			w.close()
		}
		close(quit)
		wg.Wait()
	}
}

// errCodes lists the codes an error carries: every diagnostic of a
// configuration with errors, every failure of a start-up, sorted, once
// each.
func errCodes(err error) []diag.Code {
	var codes []diag.Code
	var walk func(error)
	walk = func(err error) {
		var l *diag.ListError
		switch e := err.(type) {
		case nil:
		case *diag.Error:
			codes = append(codes, e.Code)
		case diag.Diagnostic:
			codes = append(codes, e.Code)
		case interface{ Unwrap() []error }:
			for _, u := range e.Unwrap() {
				walk(u)
			}
		default:
			if errors.As(err, &l) {
				codes = append(codes, l.Diagnostics.Codes()...)
			} else {
				walk(errors.Unwrap(err))
			}
		}
	}
	walk(err)
	if len(codes) == 0 {
		codes = append(codes, diag.CodeOf(err))
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

// codesText is codes as one log value: CONFIG_PARSE,MCP_SERVER_UNKNOWN.
func codesText(codes []diag.Code) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = string(c)
	}
	return strings.Join(s, ",")
}
