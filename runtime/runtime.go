// Package runtime is heddle's live half: it opens a compiled plan — one
// shared client per MCP server, all under one start-up deadline — and hands
// each agent a toolset: the tools its grants allow, named so any model API
// accepts them, guarded by deadlines, policies and approval.
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

//lint:file-ignore SA1019 sampling is deprecated from protocol 2026-07-28 on, but servers of earlier revisions still send it; Options.Sampling serves them.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
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
	// Elicitation answers servers' elicitation requests. nil declines.
	Elicitation func(ctx context.Context, server string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	// Sampling answers servers' sampling requests. nil declines.
	Sampling func(ctx context.Context, server string, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	// Dial, when set, supplies the transport of every connection attempt to
	// the MCP server it names, instead of the plan's (tests use in-memory
	// transports through it).
	Dial func(server string) mcp.Transport
	// MCPUses declares servers that application code reaches directly
	// through Runtime.MCP; they are opened, verified and health-checked
	// like an agent's grants.
	MCPUses []MCPUse
	// OnCall, when set, is told of every finished call (for metrics). It
	// runs on the caller's goroutine and must not block.
	OnCall func(CallEvent)
	// Lock, when set, pins tool definitions (see Lock).
	Lock *Lock
	// Eager connects the servers declared connect: lazy at start-up like
	// the others, with no need for their pins: heddle lock does, to pin
	// what they offer.
	Eager bool
	// ClientName and ClientVersion identify heddle to servers.
	ClientName, ClientVersion string
	// Now is the clock; default time.Now.
	Now func() time.Time

	// previous is the generation Reopen opens from, while it opens.
	previous *Runtime
	// TracerProvider makes the spans of calls, and of the kinds' requests
	// (see docs/observability.md). Default: the global provider
	// (otel.GetTracerProvider), a no-op unless a program installs one.
	TracerProvider trace.TracerProvider
	// TraceContent records tools' arguments and results in spans. Default
	// false: spans carry names, ids and codes only.
	TraceContent bool
	// OnMCPOperation, when set, is told of every request sent to an MCP
	// server (for metrics). It runs on the sender's goroutine and must not
	// block.
	OnMCPOperation func(MCPOperation)
}

// MCPUse declares one direct use of a server by application code.
type MCPUse struct {
	Server  string
	Include []string
	// ToolTimeout is the supervisor's deadline of one call through a
	// handle on Server, as policies.tool_timeout_ms is an agent's: past it
	// the call fails TOOL_TIMEOUT. Default 25s (tool_timeout_ms's
	// default); the smallest of several uses of one server applies.
	ToolTimeout time.Duration
}

// Runtime is one worker's live plan. See the package documentation.
type Runtime struct {
	plan   *plan.Plan
	opts   Options
	log    *slog.Logger
	tracer trace.Tracer

	toolsGen  atomic.Uint64       // bumped when any dependency's tools go stale or change
	instances map[string]Instance // the opened kinds, by name
	opened    []string            // the kinds, in the order their Open returned: Close goes backwards

	supCtx   context.Context
	supStop  context.CancelFunc
	watchers watchers

	mu       sync.Mutex
	toolsets map[string]*Toolset
	closed   bool

	hashOnce sync.Once
	hash     string
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
	if err := rt.open(ctx, deadline, budget); err != nil {
		rt.Close()
		return nil, startupTimeout(err)
	}
	return rt, nil
}

// open runs start-up's steps under the one deadline.
func (rt *Runtime) open(ctx context.Context, deadline time.Time, budget time.Duration) error {
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
	failures, err := rt.openAll(ctx, hdeadline, deadline, budget, kinds)
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
	rt := &Runtime{plan: p, opts: opts, toolsets: map[string]*Toolset{}, instances: map[string]Instance{}}
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
	rt.tracer = rt.opts.TracerProvider.Tracer(TracerName)
	rt.supCtx, rt.supStop = context.WithCancel(context.Background())
	return rt
}

// openAll opens every kind concurrently, each by hdeadline. A dependency
// that could not be opened is a Failure; an error of a kind's Open aborts
// start-up.
func (rt *Runtime) openAll(ctx context.Context, hdeadline, deadline time.Time, budget time.Duration, kinds map[string]Kind) ([]*Failure, error) {
	var (
		g        errgroup.Group
		mu       sync.Mutex
		failures []*Failure
		errs     []error
	)
	for _, kname := range config.SortedKeys(kinds) {
		g.Go(func() error {
			hctx, hcancel := context.WithDeadline(ctx, hdeadline)
			defer hcancel()
			inst, fs, err := rt.openKind(hctx, kname, kinds[kname], rt.kindEnv(deadline, budget))
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
	slices.SortFunc(failures, func(a, b *Failure) int {
		if c := strings.Compare(a.Server, b.Server); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return failures, nil
}

// kindEnv is what every kind's Open gets.
func (rt *Runtime) kindEnv(deadline time.Time, budget time.Duration) KindEnv {
	o := rt.opts
	return KindEnv{Plan: rt.plan, Secrets: o.Secrets, Logger: rt.log, HTTPTransport: o.HTTPTransport,
		Closing: rt.supCtx, Deadline: deadline, Budget: budget, Events: events{rt},
		LookupEnv: o.LookupEnv, ClientName: o.ClientName, ClientVersion: o.ClientVersion,
		Elicitation: o.Elicitation, Sampling: o.Sampling, Dial: o.Dial, MCPUses: o.MCPUses, Lock: o.Lock,
		TracerProvider: o.TracerProvider, TraceContent: o.TraceContent, OnMCPOperation: o.OnMCPOperation, Eager: o.Eager}
}

// buildToolsets builds every agent's toolset and its name index.
func (rt *Runtime) buildToolsets(ctx context.Context) error {
	for _, agent := range config.SortedKeys(rt.plan.Agents) {
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
func (rt *Runtime) sortFailures(failures []*Failure) error {
	var fatal []*Failure
	for _, f := range failures {
		if f.Fatal {
			fatal = append(fatal, f)
			rt.log.Debug("required dependency failed at start-up", "server", f.Server, "code", diag.CodeOf(f.Err), "reason", diag.Reason(f.Err))
			continue
		}
		rt.log.Warn("optional dependency unavailable at start-up", "server", f.Server, "code", diag.CodeOf(f.Err), "error", f.Err.Error())
		rt.log.Debug("optional dependency unavailable at start-up", "server", f.Server, "reason", diag.Reason(f.Err))
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

// Failure is one dependency that failed start-up.
type Failure struct {
	// Server names the dependency: an MCP server, SQL source, remote agent.
	Server string
	// Kind is the grant kind it belongs to ("mcp" for servers); the runtime
	// fills it in for a kind's failures that leave it empty.
	Kind  string
	Err   error // carries the code
	Fatal bool
}

// StartupError lists every server that failed start-up. It matches each
// failure's code through diag.Has and errors.Is/As.
type StartupError struct {
	Failures []*Failure
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
		if d.State != StateReady && d.State != StateIdle {
			out[d.Name] = d.Code
		}
	}
	return out
}

// Plan returns the plan the runtime was opened with.
func (rt *Runtime) Plan() *plan.Plan { return rt.plan }

// MCPHandle is application code's direct, filtered view of one MCP server:
// the same shared client agents use (no second connection), with no model
// in between. Failures are errors with codes, never refusal results: there
// is no model to read them. A handle is safe for concurrent use.
type MCPHandle interface {
	// Tools lists the handle's tools.
	Tools(ctx context.Context) ([]*mcp.Tool, error)
	// Call calls one of the handle's tools by its own name. The server's
	// timeout_ms bounds it (TRANSPORT_TIMEOUT), and so does the
	// supervisor's deadline, as for an agent's call (TOOL_TIMEOUT;
	// MCPUse.ToolTimeout, default 25s); a tool outside the filter is
	// TOOL_UNKNOWN; a server that is down is TOOL_UNAVAILABLE.
	Call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error)
	// Resources, ReadResource, Prompts and GetPrompt reach the server's
	// other primitives (every page of a listing).
	Resources(ctx context.Context) ([]*mcp.Resource, error)
	ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
	Prompts(ctx context.Context) ([]*mcp.Prompt, error)
	GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error)
}

// MCPProvider is an instance that hands out MCPHandles: the mcp kind's.
type MCPProvider interface {
	MCP(server string, include []string) (MCPHandle, error)
}

// MCP returns a handle on server, limited to the tools matching include
// (none: every tool). The server must be one the runtime opened: granted to
// an agent, or declared in Options.MCPUses, where its filters were checked
// at start-up. Patterns are checked again against what the server offers,
// so a handle whose filter matches nothing fails now with
// MCP_FILTER_UNMATCHED rather than later.
func (rt *Runtime) MCP(server string, include ...string) (MCPHandle, error) {
	for _, name := range config.SortedKeys(rt.instances) {
		if p, ok := rt.instances[name].(MCPProvider); ok {
			return p.MCP(server, include)
		}
	}
	return nil, diag.New(diag.MCPServerUnknown, "server %q is not opened by this runtime: it opens no MCP server", server)
}

var _ error = (*StartupError)(nil)

// errRuntimeClosed is returned by operations after Close.
var errRuntimeClosed = diag.New(diag.ShuttingDown, "the runtime is closed: the worker is shutting down")
