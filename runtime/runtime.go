// Package runtime is what an application calls to run a compiled plan: it
// opens every kind the plan grants — one shared client per MCP server, all
// under one start-up deadline — and hands each agent a toolset: the tools
// its grants allow, named so any model API accepts them, guarded by
// deadlines, policies and approval. The kinds themselves implement package
// runtime/driver, as database drivers implement database/sql/driver; an
// application links them with package builtin.
//
//	rt, err := runtime.Open(ctx, p, runtime.Options{Logger: slog.Default()})
//	if err != nil {
//		return err // names every required server that failed, with its code
//	}
//	defer rt.Close()
//	ts, _ := rt.Toolset("incident-triage")
//	tools, _ := ts.Tools(ctx)
//	res, err := ts.Call(ctx, "search_runbooks", map[string]any{"query": "disk full"})
//
// One Runtime serves a whole worker process. It is safe for concurrent use:
// calls share each server's session with no lock and run in parallel. A
// server that fails (at start-up, when optional, or later) is reconnected in
// the background by a supervisor; meanwhile its tools answer
// TOOL_UNAVAILABLE as a result the model can read.
//
// What one conversation's model is given is a View of the toolset
// (Toolset.NewView): the same tools and calls, except that the tools of
// grants that say defer are found with search_tools and added with
// load_tools, in that conversation only.
//
// A worker that reloads its configuration opens the new plan with Reopen,
// which keeps the live runtime's dependencies whose connection did not
// change, and holds its runtimes in Generations, which swaps them
// atomically and closes an old one when its last call has ended.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/secrets"
)

// Options configure a Runtime. Every field is optional.
type Options struct {
	// Kinds are the live halves of the kinds the plan may grant. Default:
	// DefaultKinds(), the set the program links (package builtin).
	Kinds *KindSet
	// Logger receives the runtime's log. Default: discard.
	Logger *slog.Logger
	// Secrets resolves references. Default: environment, files, and the
	// plan's secrets directory.
	Secrets secrets.Resolver
	// LookupEnv reads the worker's environment for the stdio allow-list.
	// Default os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// HTTPTransport is the base transport of HTTP and SSE clients. Default:
	// a transport of the runtime's own, closed with it.
	HTTPTransport http.RoundTripper
	// Approver decides calls that policy says need approval. nil refuses
	// them with TOOL_APPROVAL_REQUIRED.
	Approver Approver
	// OnCall, when set, is told of every finished call (for metrics). It
	// runs on the caller's goroutine and must not block.
	OnCall func(CallEvent)
	// DigestArgs, when set, fills each CallEvent's ArgsSHA256 (an audit
	// trail wants it); without it a call's arguments are not encoded for
	// OnCall.
	DigestArgs bool
	// Lock, when set, pins tool definitions (see Lock).
	Lock *Lock
	// ClientName and ClientVersion identify heddle to servers.
	ClientName, ClientVersion string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Rates, when set, counts the rates of policies.limits in a store every
	// worker of a fleet shares (serve.state kind redis, whose
	// statestore.Store.Rates is one), so that the fleet admits what one
	// worker would. Bounds on calls at once stay each worker's own. Default:
	// each worker counts its own rates.
	Rates RateStore
	// OnRateFallback, when set, is told of each call Rates could not count
	// under on_error: open, which the worker's own counts admitted instead
	// (for metrics). It runs on the caller's goroutine and must not block.
	OnRateFallback func(agent string)

	// TracerProvider makes the spans of calls, and of the kinds' requests
	// (see docs/observability.md). Default: the global provider
	// (otel.GetTracerProvider), a no-op unless a program installs one.
	TracerProvider trace.TracerProvider
	// TraceContent records tools' arguments and results in spans. Default
	// false: spans carry names, ids and codes only.
	TraceContent bool
}

// Runtime is one worker's live plan. See the package documentation.
type Runtime struct {
	plan   *plan.Plan
	opts   Options
	log    *slog.Logger
	tracer trace.Tracer

	toolsGen  atomic.Uint64              // bumped when any dependency's tools go stale or change
	instances map[string]driver.Instance // the opened kinds, by name
	opened    []string                   // the kinds, in the order their Open returned: Close goes backwards

	supCtx   context.Context
	supStop  context.CancelFunc
	watchers watchers

	mu       sync.Mutex
	toolsets map[string]*Toolset
	closed   bool

	hashOnce sync.Once
	hash     string

	// screened holds the shadowing findings already logged (Toolset.flag).
	screened sync.Map
}

// Open opens every client the plan needs under one start-up deadline.
//
// The deadline (ai.startup_timeout_ms) is taken as an absolute time before
// anything else and bounds secret resolution, auth construction, every
// connect (all concurrent) and filter verification. Each server's own
// handshake budget ends a margin before it, so a slow server names itself.
// Required servers that fail abort start-up; the error names every one of
// them with its code. Optional ones are logged and left to the supervisor.
func Open(ctx context.Context, p *plan.Plan, opts Options) (*Runtime, error) {
	return open(ctx, p, opts, nil)
}

// open is Open, or Reopen from prev when prev is not nil.
func open(ctx context.Context, p *plan.Plan, opts Options, prev *Runtime) (*Runtime, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	budget := time.Duration(p.Startup.TimeoutMS) * time.Millisecond
	deadline := now().Add(budget)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()

	rt := newRuntime(p, opts)
	// The runtime owns cleanup: whatever step fails, everything opened
	// before it — servers, kinds' instances, supervisors — is closed.
	if err := rt.open(ctx, deadline, budget, prev); err != nil {
		rt.Close()
		return nil, startupTimeout(err)
	}
	return rt, nil
}

// open runs start-up's steps under the one deadline.
func (rt *Runtime) open(ctx context.Context, deadline time.Time, budget time.Duration, prev *Runtime) error {
	set := rt.opts.Kinds
	if set == nil {
		set = DefaultKinds()
	}
	kinds, err := kindsToOpen(rt.plan, set)
	if err != nil {
		return err
	}
	// Every kind opens concurrently, each by a deadline a margin before the
	// group's, so that a slow dependency names itself.
	hdeadline := deadline.Add(-handshakeMargin(budget))
	failures, err := rt.openAll(ctx, hdeadline, rt.env(deadline, budget), kinds, prev)
	if err != nil {
		return err
	}
	if err := rt.sortFailures(failures); err != nil {
		return err
	}
	// Every toolset is built now, so that a name clash fails start-up
	// rather than a call. A tolerated failure may have spent the budget
	// (a server that hung to the deadline): building is then given a
	// fresh one, as the kinds' verification is, or one hanging optional
	// server would fail every agent.
	bctx := ctx
	if len(failures) > 0 {
		var cancel context.CancelFunc
		bctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), budget)
		defer cancel()
	}
	return rt.buildToolsets(bctx) // Open codes a deadline's error
}

// startupTimeout codes an error that is only the start-up context's
// (its deadline passed while a step waited): STARTUP_TIMEOUT, so that no
// path out of Open returns an uncoded error.
func startupTimeout(err error) error {
	if diag.CodeOf(err) == "" && errors.Is(err, context.DeadlineExceeded) {
		return diag.Wrap(diag.StartupTimeout, err, "start-up did not finish within ai.startup_timeout_ms")
	}
	return err
}

// newRuntime is a runtime with its options' defaults, opening nothing yet.
func newRuntime(p *plan.Plan, opts Options) *Runtime {
	rt := &Runtime{plan: p, opts: opts, toolsets: map[string]*Toolset{}, instances: map[string]driver.Instance{}}
	rt.log = opts.Logger
	if rt.log == nil {
		rt.log = slog.New(slog.DiscardHandler)
	}
	if rt.opts.Secrets == nil {
		rt.opts.Secrets = secrets.New(secrets.Options{Dir: p.Secrets.Dir})
	}
	if rt.opts.LookupEnv == nil {
		rt.opts.LookupEnv = os.LookupEnv
	}
	if rt.opts.ClientName == "" {
		rt.opts.ClientName = "heddle"
	}
	if rt.opts.ClientVersion == "" {
		rt.opts.ClientVersion = "devel"
	}
	if rt.opts.TracerProvider == nil {
		rt.opts.TracerProvider = otel.GetTracerProvider()
	}
	rt.tracer = rt.opts.TracerProvider.Tracer(driver.TracerName)
	rt.supCtx, rt.supStop = context.WithCancel(context.Background())
	return rt
}

// openAll opens every kind concurrently, each by hdeadline. A dependency
// that could not be opened is a driver.Failure; an error of a kind's Open
// aborts start-up.
func (rt *Runtime) openAll(ctx context.Context, hdeadline time.Time, env driver.Env, kinds map[string]driver.Kind, prev *Runtime) ([]*driver.Failure, error) {
	var (
		g        errgroup.Group
		mu       sync.Mutex
		failures []*driver.Failure
		errs     []error
	)
	for _, kname := range slices.Sorted(maps.Keys(kinds)) {
		kenv := env
		kenv.Pins = rt.opts.Lock.Pins(kname)
		g.Go(func() error {
			hctx, hcancel := context.WithDeadline(ctx, hdeadline)
			defer hcancel()
			inst, fs, err := openKind(hctx, kname, kinds[kname], kenv, prev)
			mu.Lock()
			defer mu.Unlock()
			for _, f := range fs {
				if f.Kind == "" {
					f.Kind = kname
				}
			}
			failures = append(failures, fs...)
			if inst != nil {
				rt.instances[kname] = inst
				rt.opened = append(rt.opened, kname)
			}
			if err != nil {
				errs = append(errs, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(failures, func(a, b *driver.Failure) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return failures, nil
}

// env is what every kind's Open gets, built once for every kind: each gets
// a copy with its own part of the lock.
func (rt *Runtime) env(deadline time.Time, budget time.Duration) driver.Env {
	o := rt.opts
	return driver.Env{Plan: rt.plan, Secrets: o.Secrets, Logger: rt.log, HTTPTransport: o.HTTPTransport,
		Closing: rt.supCtx, Deadline: deadline, Budget: budget, Events: events{rt},
		LookupEnv: o.LookupEnv, ClientName: o.ClientName, ClientVersion: o.ClientVersion,
		TracerProvider: o.TracerProvider, TraceContent: o.TraceContent}
}

// buildToolsets builds every agent's toolset and its name index.
func (rt *Runtime) buildToolsets(ctx context.Context) error {
	for _, agent := range slices.Sorted(maps.Keys(rt.plan.Agents)) {
		ts, err := rt.Toolset(agent)
		if err != nil {
			return err
		}
		if _, err := ts.index(ctx); err != nil {
			return err
		}
	}
	return nil
}

// sortFailures logs the tolerated failures — their kinds' supervisors bring
// them back — and returns a StartupError naming every fatal one.
func (rt *Runtime) sortFailures(failures []*driver.Failure) error {
	var fatal []*driver.Failure
	for _, f := range failures {
		if f.Fatal {
			fatal = append(fatal, f)
			rt.log.Debug("required dependency failed at start-up", "server", f.Name, "code", diag.CodeOf(f.Err), "reason", diag.Reason(f.Err))
			continue
		}
		rt.log.Warn("optional dependency unavailable at start-up", "server", f.Name, "code", diag.CodeOf(f.Err), "error", f.Err.Error())
		rt.log.Debug("optional dependency unavailable at start-up", "server", f.Name, "reason", diag.Reason(f.Err))
	}
	if len(fatal) > 0 {
		return &StartupError{Failures: fatal}
	}
	return nil
}

// handshakeMargin is how much sooner than the group deadline each server's
// own handshake budget ends: a tenth of the budget, at most a second.
func handshakeMargin(budget time.Duration) time.Duration {
	return min(budget/10, time.Second)
}

// StartupError lists every server that failed start-up. It matches each
// failure's code through diag.Has and errors.Is/As.
type StartupError struct {
	Failures []*driver.Failure
}

// Error names every failed server with its code and safe message.
func (e *StartupError) Error() string {
	parts := make([]string, len(e.Failures))
	for i, f := range e.Failures {
		parts[i] = f.Err.Error()
	}
	return fmt.Sprintf("start-up failed (%d): %s", len(e.Failures), strings.Join(parts, "; "))
}

// Unwrap returns the failures' errors.
func (e *StartupError) Unwrap() []error {
	out := make([]error, len(e.Failures))
	for i, f := range e.Failures {
		out[i] = f.Err
	}
	return out
}

// Close closes every kind's instance, in the reverse order of their
// opening (the last to finish opening closes first), one after the other:
// sessions close (and stdio children die with their process groups) once
// the last in-flight call that holds one returns. Close is idempotent and
// waits for the supervisors to stop.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil
	}
	rt.closed = true
	rt.mu.Unlock()
	rt.supStop()
	rt.watchers.closeAll()
	var errs []error
	for _, name := range slices.Backward(rt.opened) {
		if err := rt.instances[name].Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Unavailable lists the dependencies that are not ready, with the code of
// why.
func (rt *Runtime) Unavailable() map[string]diag.Code {
	out := map[string]diag.Code{}
	for _, d := range rt.Health().Dependencies {
		if d.State != driver.StateReady && d.State != driver.StateIdle {
			out[d.Name] = d.Code
		}
	}
	return out
}

// Plan returns the plan the runtime was opened with.
func (rt *Runtime) Plan() *plan.Plan { return rt.plan }

// Instance returns the opened instance of kind, for that kind's own
// handles on its dependencies (such as the mcp kind's mcplive.NewHandle,
// application code's direct handle on one MCP server), as database/sql's
// Conn.Raw hands over a driver's connection.
func (rt *Runtime) Instance(kind string) (driver.Instance, bool) {
	inst, ok := rt.instances[kind]
	return inst, ok
}

var _ error = (*StartupError)(nil)

// errRuntimeClosed is returned by operations after Close.
var errRuntimeClosed = diag.New(diag.ShuttingDown, "the runtime is closed: the worker is shutting down")
