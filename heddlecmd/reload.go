package heddlecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/runtime"
)

// WatchDebounce is how long serve --watch waits after the last change it
// sees before it reloads: an editor's save, or a ConfigMap's swap of its
// ..data link, is several events.
const WatchDebounce = 250 * time.Millisecond

// reloader reloads serve's configuration — on SIGHUP, and with --watch
// when a file changes — as a new generation of gens: the configuration is
// loaded and compiled as at start-up (with the lock read again), opened
// with runtime.Reopen from the live runtime, which keeps the servers whose
// connection did not change, and swapped in. A configuration with errors,
// or one that cannot be opened, changes nothing: the live one goes on
// serving, the codes are logged, counted and shown in /readyz's body.
type reloader struct {
	e     *env
	rf    *runFlags
	log   *slog.Logger
	gens  *runtime.Generations
	m     *metrics.Metrics
	serve []byte // the serve: section at start-up, which holds until a restart

	mu sync.Mutex // one reload at a time
}

func newReloader(e *env, rf *runFlags, log *slog.Logger, gens *runtime.Generations, m *metrics.Metrics) *reloader {
	b, _ := json.Marshal(gens.Current().Plan().Serve)
	return &reloader{e: e, rf: rf, log: log, gens: gens, m: m, serve: b}
}

// reloads starts serve's reloads: on each signal of hup (SIGHUP), and with
// watch when a file changes; each trigger during a reload asks for one
// more after it. stop ends them and waits for a reload in flight.
func (e *env) reloads(ctx context.Context, rf *runFlags, log *slog.Logger, gens *runtime.Generations, m *metrics.Metrics, hup <-chan os.Signal, watch bool) (stop func()) {
	r := newReloader(e, rf, log, gens, m)
	trigger := make(chan struct{}, 1)
	ask := func() {
		select {
		case trigger <- struct{}{}:
		default: // one is pending: it reads the files as they are then
		}
	}
	var w *watcher
	if watch {
		var err error
		if w, err = watchConfig(e, rf, log, ask); err != nil {
			log.Warn("serve --watch: cannot watch the configuration; SIGHUP still reloads", "error", err.Error())
		}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-hup:
				log.Info("SIGHUP: reloading the configuration")
				ask()
			case <-trigger:
				_ = r.reload(ctx)
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

// reload makes one attempt. Its error carries the codes of why the live
// configuration was kept.
func (r *reloader) reload(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := time.Now()
	rt, err := r.open(ctx)
	if err != nil {
		codes := errCodes(err)
		r.gens.Failed(start, codes)
		if r.m != nil {
			r.m.Reloaded(err)
		}
		r.log.Error("reload failed: the running configuration goes on serving", "generation", r.gens.Generation(), "codes", codesText(codes), "error", err.Error())
		return err
	}
	if b, _ := json.Marshal(rt.Plan().Serve); !bytes.Equal(b, r.serve) {
		r.log.Warn("the serve: section changed; it takes effect at the next start (listen, auth, hosts and limits are read once)")
	}
	n := r.gens.Swap(rt)
	if r.m != nil {
		r.m.Reloaded(nil)
	}
	r.log.Info("configuration reloaded", "generation", n, "plan_hash", rt.PlanHash(), "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// open compiles the configuration and opens it from the live runtime.
func (r *reloader) open(ctx context.Context) (*runtime.Runtime, error) {
	p, ds := r.e.compile()
	if p == nil {
		return nil, ds.Err()
	}
	for _, d := range ds {
		r.log.Warn("configuration warning", "code", d.Code, "diagnostic", d.Error())
	}
	opts, err := r.e.runtimeOptions(ctx, r.rf, r.log, false)
	if err != nil {
		return nil, err
	}
	return runtime.Reopen(ctx, p, opts, r.gens.Current())
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

func codesText(codes []diag.Code) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = string(c)
	}
	return strings.Join(s, ",")
}

// watcher is serve --watch: it watches the directories of the
// configuration — the deployment file's, the agents directory and each
// agent's, the lock file's — rather than the files, since a ConfigMap
// volume replaces its files by swapping the ..data link (a rename, not a
// write), and an editor often saves by rename too. After a change and
// WatchDebounce of quiet, it asks for a reload.
type watcher struct {
	w                    *fsnotify.Watcher
	log                  *slog.Logger
	dirs                 func() []string // every directory to watch, as the agents directory holds now
	configDir, agentsDir string
	lockDir, lockBase    string
	wg                   sync.WaitGroup
}

// watchConfig starts watching for e's configuration; reload is asked (it
// must not block) after each batch of changes.
func watchConfig(e *env, rf *runFlags, log *slog.Logger, reload func()) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	opts := e.options()
	w := &watcher{w: fw, log: log, configDir: filepath.Clean(filepath.Dir(opts.ConfigFile)), agentsDir: filepath.Clean(opts.AgentsDir)}
	if rf.lock != "" {
		w.lockDir, w.lockBase = filepath.Clean(filepath.Dir(rf.lock)), filepath.Base(rf.lock)
	}
	w.dirs = func() []string {
		dirs := []string{w.configDir, w.agentsDir}
		entries, _ := os.ReadDir(opts.AgentsDir)
		for _, d := range entries {
			p := filepath.Join(opts.AgentsDir, d.Name())
			if fi, err := os.Stat(p); err == nil && fi.IsDir() && !strings.HasPrefix(d.Name(), "..") {
				dirs = append(dirs, p)
			}
		}
		if w.lockDir != "" {
			dirs = append(dirs, w.lockDir)
		}
		slices.Sort(dirs)
		return slices.Compact(dirs)
	}
	w.add()
	w.wg.Add(1)
	go w.loop(reload)
	return w, nil
}

// add watches every directory there is now: a new agent's is watched from
// the reload after it appears; a removed one's watch ends by itself.
func (w *watcher) add() {
	for _, d := range w.dirs() {
		if err := w.w.Add(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			w.log.Warn("serve --watch: cannot watch a directory", "dir", d, "error", err.Error())
		}
	}
}

// relevant reports an event that may change the configuration: anything
// but a change of mode, except that in the lock file's directory (often
// the working directory) only the lock itself counts, unless it is also
// a configuration directory.
func (w *watcher) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	dir := filepath.Clean(filepath.Dir(ev.Name))
	return dir != w.lockDir || filepath.Base(ev.Name) == w.lockBase || dir == w.configDir || dir == w.agentsDir
}

func (w *watcher) loop(reload func()) {
	defer w.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			if w.relevant(ev) {
				w.log.Debug("serve --watch: configuration changed", "file", ev.Name, "op", ev.Op.String())
				timer.Reset(WatchDebounce)
			}
		case err, ok := <-w.w.Errors:
			if !ok {
				return
			}
			w.log.Warn("serve --watch: watching failed; SIGHUP still reloads", "error", err.Error())
		case <-timer.C:
			w.add()
			reload()
		}
	}
}

// close stops watching and waits for the loop to end.
func (w *watcher) close() {
	_ = w.w.Close()
	w.wg.Wait()
}
