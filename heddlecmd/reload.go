package heddlecmd

import (
	"context"
	"log/slog"
	"os"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/reload"
	"github.com/heddlehq/heddle/runtime"
)

// WatchDebounce is how long serve --watch waits after the last change it
// sees before it reloads (package reload's).
const WatchDebounce = reload.WatchDebounce

// newReloader returns serve's reloader of gens (package reload): the
// configuration is loaded and compiled as at start-up, and opened with the
// options of rf, the lock read again. Its lines go to log; m counts
// reloads.
func newReloader(e *invocation, rf *runFlags, log *slog.Logger, gens *runtime.Generations, m *metrics.Metrics) *reload.Reloader {
	opts := &reload.Options{
		Runtime: func(ctx context.Context) (runtime.Options, error) { return e.runtimeOptions(ctx, rf, log, false) },
		Logger:  log,
	}
	if m != nil {
		opts.OnReload = m.Reloaded
	}
	return reload.New(gens, func() (*plan.Plan, diag.Diagnostics) { return e.compile() }, opts)
}

// reloads starts serve's reloads: on each signal of hup (SIGHUP), and with
// watch when a file of the configuration — the deployment's directory, the
// agents', the lock file — changes. stop ends them and waits for a reload
// in flight.
func (e *invocation) reloads(ctx context.Context, rf *runFlags, log *slog.Logger, gens *runtime.Generations, m *metrics.Metrics, hup <-chan os.Signal, watch bool) (stop func()) {
	r := newReloader(e, rf, log, gens, m)
	var w *reload.Watch
	if watch {
		opts := e.options()
		w = &reload.Watch{Config: opts.ConfigFile, Agents: opts.AgentsDir, Lock: rf.lock}
	}
	return r.Start(ctx, hup, w)
}
