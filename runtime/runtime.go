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
	"golang.org/x/sync/errgroup"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/internal/childproc"
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
	// Dial, when set, supplies the transport of every connection attempt
	// instead of the plan's (tests use in-memory transports through it).
	Dial func(server *mcpkind.Server) mcp.Transport
	// MCPUses declares servers that application code reaches directly
	// through Runtime.MCP; they are opened, verified and health-checked
	// like an agent's grants.
	MCPUses []MCPUse
	// OnCall, when set, is told of every finished call (for metrics). It
	// runs on the caller's goroutine and must not block.
	OnCall func(CallEvent)
	// Lock, when set, pins tool definitions (see Lock).
	Lock *Lock
	// ClientName and ClientVersion identify heddle to servers.
	ClientName, ClientVersion string
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// MCPUse declares one direct use of a server by application code.
type MCPUse struct {
	Server  string
	Include []string
}

// Runtime is one worker's live plan. See the package documentation.
type Runtime struct {
	plan *plan.Plan
	opts Options
	log  *slog.Logger

	servers   map[string]*server
	toolsGen  atomic.Uint64 // bumped when any server's tools go stale or change
	releases  []func()
	instances map[string]Instance // opened kinds other than mcp

	supCtx   context.Context
	supStop  context.CancelFunc
	watchers watchers

	mu       sync.Mutex
	toolsets map[string]*Toolset
	closed   bool
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
		return nil, err
	}
	return rt, nil
}

// open runs start-up's steps under the one deadline.
func (rt *Runtime) open(ctx context.Context, deadline time.Time, budget time.Duration) error {
	names, err := rt.needed()
	if err != nil {
		return err
	}
	set := rt.opts.Kinds
	if set == nil {
		set = DefaultKinds()
	}
	kinds, err := kindsInPlan(rt.plan, set)
	if err != nil {
		return err
	}
	// Phase 1: secrets, auth and connections, all concurrent; each its own
	// deadline a margin before the group's, so a slow one names itself.
	hdeadline := deadline.Add(-handshakeMargin(budget))
	failures, err := rt.openAll(ctx, hdeadline, names, kinds)
	if err != nil {
		return err
	}
	tolerated, err := rt.sortFailures(failures)
	if err != nil {
		return err
	}
	// Phase 2: list and verify filters of the servers that opened. A
	// tolerated failure may have spent the budget: verification then gets
	// a fresh one.
	if tolerated {
		var vcancel context.CancelFunc
		ctx, vcancel = context.WithTimeout(context.WithoutCancel(ctx), budget)
		defer vcancel()
	}
	return rt.verify(ctx)
}

// newRuntime is a runtime with its options' defaults, opening nothing yet.
func newRuntime(p *plan.Plan, opts Options) *Runtime {
	rt := &Runtime{plan: p, opts: opts, servers: map[string]*server{}, toolsets: map[string]*Toolset{}, instances: map[string]Instance{}}
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
	rt.supCtx, rt.supStop = context.WithCancel(context.Background())
	return rt
}

// openAll opens every server and every granted kind concurrently, each by
// hdeadline. A dependency that could not be opened is a Failure; an error
// of a kind's Open aborts start-up.
func (rt *Runtime) openAll(ctx context.Context, hdeadline time.Time, names []string, kinds map[string]Kind) ([]*Failure, error) {
	var (
		g        errgroup.Group
		mu       sync.Mutex
		failures []*Failure
		errs     []error
	)
	fail := func(fs ...*Failure) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fs...)
	}
	for _, name := range names {
		s := rt.newServer(name)
		rt.servers[name] = s
		release, _ := s.acquire()
		rt.releases = append(rt.releases, release)
		g.Go(func() error {
			hctx, hcancel := context.WithDeadline(ctx, hdeadline)
			defer hcancel()
			if f := s.open(hctx); f != nil {
				fail(f)
			}
			return nil
		})
	}
	for _, kname := range config.SortedKeys(kinds) {
		g.Go(func() error {
			hctx, hcancel := context.WithDeadline(ctx, hdeadline)
			defer hcancel()
			inst, fs, err := kinds[kname].Open(hctx, KindEnv{Plan: rt.plan, Secrets: rt.opts.Secrets, Logger: rt.log,
				HTTPTransport: rt.opts.HTTPTransport, Closing: rt.supCtx})
			for _, f := range fs {
				if f.Kind == "" {
					f.Kind = kname
				}
			}
			fail(fs...)
			mu.Lock()
			defer mu.Unlock()
			if inst != nil {
				rt.instances[kname] = inst
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

// open prepares and connects one server at start-up, and lists its tools at
// once, overlapping other servers' handshakes (a listing that fails here is
// tried again, and reported, by verify).
func (s *server) open(ctx context.Context) *Failure {
	if err := s.prepare(ctx); err != nil {
		return &Failure{Server: s.name, Kind: "mcp", Err: err, Fatal: true}
	}
	if err := s.connect(ctx); err != nil {
		return &Failure{Server: s.name, Kind: "mcp", Err: err, Fatal: s.spec.Required}
	}
	_, _, _ = s.refresh(ctx, true)
	return nil
}

// sortFailures logs tolerated failures and hands their servers to the
// supervisor; it returns a StartupError naming every fatal one, and whether
// any was tolerated.
func (rt *Runtime) sortFailures(failures []*Failure) (tolerated bool, err error) {
	var fatal []*Failure
	for _, f := range failures {
		if f.Fatal {
			fatal = append(fatal, f)
			rt.log.Debug("required dependency failed at start-up", "server", f.Server, "code", diag.CodeOf(f.Err), "reason", diag.Reason(f.Err))
			continue
		}
		tolerated = true
		rt.log.Warn("optional dependency unavailable at start-up", "server", f.Server, "code", diag.CodeOf(f.Err))
		rt.log.Debug("optional dependency unavailable at start-up", "server", f.Server, "reason", diag.Reason(f.Err))
		if s := rt.servers[f.Server]; s != nil && f.Kind == "mcp" {
			s.superviseSoon()
		}
	}
	if len(fatal) > 0 {
		return tolerated, &StartupError{Failures: fatal}
	}
	return tolerated, nil
}

// handshakeMargin is how much sooner than the group deadline each server's
// own handshake budget ends: a tenth of the budget, at most a second.
func handshakeMargin(budget time.Duration) time.Duration {
	return min(budget/10, time.Second)
}

func (rt *Runtime) handshakeBudget() time.Duration {
	return time.Duration(rt.plan.Startup.TimeoutMS) * time.Millisecond
}

// needed returns the servers to open: every server an agent grants, and
// every server application code declared in Options.MCPUses.
func (rt *Runtime) needed() ([]string, error) {
	set := map[string]bool{}
	for _, a := range rt.plan.Agents {
		for _, g := range a.Grants {
			if mg, ok := g.Spec.(*mcpkind.Grant); ok {
				set[mg.Server] = true
			}
		}
	}
	for _, u := range rt.opts.MCPUses {
		if mcpkind.PlanServers(rt.plan)[u.Server] == nil {
			return nil, diag.New(diag.MCPServerUnknown, "application code uses server %q, which the deployment does not declare", u.Server)
		}
		set[u.Server] = true
	}
	names := config.SortedKeys(set)
	for _, n := range names {
		if mcpkind.PlanServers(rt.plan)[n] == nil {
			return nil, diag.New(diag.MCPServerUnknown, "server %q is granted but not in the plan", n)
		}
	}
	return names, nil
}

// maxIdleConnsPerServer is how many idle connections a server's HTTP
// transport keeps.
const maxIdleConnsPerServer = 64

func (rt *Runtime) newServer(name string) *server {
	spec := mcpkind.PlanServers(rt.plan)[name]
	s := &server{rt: rt, spec: spec, name: name, log: rt.log, state: StateConnecting}
	s.sup = NewSupervisor(rt.supCtx, s.reconnect, nil)
	s.stderr = childproc.NewStderrLog(rt.log, name)
	if spec.Transport != "stdio" {
		s.httpT = http.DefaultTransport.(*http.Transport).Clone()
		// Every agent's calls to the server share this transport: keep as
		// many idle connections as calls commonly run at once, not
		// net/http's two, or concurrent calls dial and drop connections.
		s.httpT.MaxIdleConnsPerHost = maxIdleConnsPerServer
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: rt.opts.ClientName, Version: rt.opts.ClientVersion}, &mcp.ClientOptions{
		Logger:                      rt.log,
		Capabilities:                rt.capabilities(),
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { s.markStale(); rt.notifyStale(s) },
		ProgressNotificationHandler: rt.progress,
		ElicitationHandler:          rt.elicitationHandler(name),
		CreateMessageHandler:        rt.samplingHandler(name),
	})
	return s
}

func (rt *Runtime) capabilities() *mcp.ClientCapabilities {
	caps := &mcp.ClientCapabilities{}
	if rt.opts.Elicitation != nil {
		caps.Elicitation = &mcp.ElicitationCapabilities{}
	}
	if rt.opts.Sampling != nil {
		caps.Sampling = &mcp.SamplingCapabilities{}
	}
	return caps
}

func (rt *Runtime) elicitationHandler(name string) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if rt.opts.Elicitation == nil {
		return nil
	}
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return rt.opts.Elicitation(ctx, name, req)
	}
}

func (rt *Runtime) samplingHandler(name string) func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if rt.opts.Sampling == nil {
		return nil
	}
	return func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return rt.opts.Sampling(ctx, name, req)
	}
}

// prepare resolves the server's secrets and builds its auth strategy, once.
func (s *server) prepare(ctx context.Context) error {
	rt := s.rt
	if s.spec.Transport == "stdio" {
		declared := map[string]string{}
		for _, k := range config.SortedKeys(s.spec.Env) {
			v := s.spec.Env[k]
			if v.Ref == nil {
				declared[k] = v.Literal
				continue
			}
			val, err := rt.opts.Secrets.Resolve(ctx, *v.Ref)
			if err != nil {
				return fmt.Errorf("server %s: env %s: %w", s.name, k, err)
			}
			declared[k] = val
		}
		s.env = childproc.Env(rt.opts.LookupEnv, declared)
		return nil
	}
	strat, err := authlive.Build(ctx, authlive.Env{Secrets: rt.opts.Secrets, Name: "server " + s.name, Purpose: "mcp", Plugins: rt.plan.AuthPlugins, Logger: rt.log}, s.spec.Auth)
	if err != nil {
		return err
	}
	s.strat = strat
	return nil
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

// Close releases the runtime's references on every server: sessions close
// (and stdio children die with their process groups) once the last in-flight
// call that holds one returns. Close is idempotent and waits for the
// supervisors to stop.
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
	var wg sync.WaitGroup
	for _, release := range rt.releases {
		wg.Add(1)
		go func() { defer wg.Done(); release() }()
	}
	wg.Wait()
	var errs []error
	for _, name := range config.SortedKeys(rt.instances) {
		if err := rt.instances[name].Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Unavailable lists the servers that are down, with the code of why.
func (rt *Runtime) Unavailable() map[string]diag.Code {
	out := map[string]diag.Code{}
	for name, s := range rt.servers {
		if st, code, _, _ := s.status(); st != StateReady {
			if code == "" {
				code = diag.MCPServerUnreachable
			}
			out[name] = code
		}
	}
	return out
}

// Plan returns the plan the runtime was opened with.
func (rt *Runtime) Plan() *plan.Plan { return rt.plan }

// server returns the shared client of name.
func (rt *Runtime) server(name string) (*server, error) {
	s, ok := rt.servers[name]
	if !ok {
		return nil, diag.New(diag.MCPServerUnknown, "server %q is not opened by this runtime", name)
	}
	return s, nil
}

// verify lists every opened server's tools and checks each grant's and
// declared use's filters against them.
func (rt *Runtime) verify(ctx context.Context) error {
	var (
		mu       sync.Mutex
		failures []*Failure
		g        errgroup.Group
	)
	for _, name := range config.SortedKeys(rt.servers) {
		s := rt.servers[name]
		if st, _, _, _ := s.status(); st != StateReady {
			continue // tolerated: its filters are checked when it connects
		}
		g.Go(func() error {
			_, _, err := s.refresh(ctx, false) // lists only a server phase 1 could not
			switch {
			case err != nil && ctx.Err() != nil:
				err = diag.Wrap(diag.StartupTimeout, err, "server %s: listing its tools did not finish within ai.startup_timeout_ms", name)
			case err != nil:
				err = diag.Wrap(diag.MCPServerUnreachable, err, "server %s: tools/list failed", name)
			default:
				err = rt.checkLock(s)
			}
			if err != nil {
				mu.Lock()
				failures = append(failures, &Failure{Server: name, Fatal: true, Err: err})
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	if len(failures) > 0 {
		slices.SortFunc(failures, func(a, b *Failure) int { return strings.Compare(a.Server, b.Server) })
		return &StartupError{Failures: failures}
	}
	var errs []*Failure
	for _, agent := range config.SortedKeys(rt.plan.Agents) {
		for _, g := range rt.plan.Agents[agent].Grants {
			mg, ok := g.Spec.(*mcpkind.Grant)
			if !ok {
				continue
			}
			if err := rt.checkFilters(mg.Server, mg.Include, mg.Exclude, "agent "+agent); err != nil {
				errs = append(errs, &Failure{Server: mg.Server, Err: err, Fatal: true})
			}
		}
	}
	for _, u := range rt.opts.MCPUses {
		if err := rt.checkFilters(u.Server, u.Include, nil, "application code"); err != nil {
			errs = append(errs, &Failure{Server: u.Server, Err: err, Fatal: true})
		}
	}
	if len(errs) > 0 {
		return &StartupError{Failures: errs}
	}
	// Build every toolset now, so that name conflicts fail start-up.
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

// checkFilters reports patterns that match none of an opened server's tools.
func (rt *Runtime) checkFilters(server string, include, exclude []string, who string) error {
	s := rt.servers[server]
	if st, _, _, _ := s.status(); st != StateReady {
		return nil
	}
	s.mu.Lock()
	tools := s.tools
	s.mu.Unlock()
	var bad []string
	for _, list := range [][]string{include, exclude} {
		for _, pat := range list {
			if !slices.ContainsFunc(tools, func(t *mcp.Tool) bool { return globMatch(pat, t.Name) }) {
				bad = append(bad, fmt.Sprintf("%q", pat))
			}
		}
	}
	if len(bad) > 0 {
		return diag.New(diag.MCPFilterUnmatched, "server %s: %s: filter %s matches none of its %d tools", server, who, strings.Join(bad, ", "), len(tools))
	}
	return nil
}

var _ error = (*StartupError)(nil)

// errRuntimeClosed is returned by operations after Close.
var errRuntimeClosed = errors.New("runtime is closed")

// checkServerFilters checks every grant's and declared use's filters over
// one server.
func (rt *Runtime) checkServerFilters(server string) error {
	for _, agent := range config.SortedKeys(rt.plan.Agents) {
		for _, g := range rt.plan.Agents[agent].Grants {
			if mg, ok := g.Spec.(*mcpkind.Grant); ok && mg.Server == server {
				if err := rt.checkFilters(server, mg.Include, mg.Exclude, "agent "+agent); err != nil {
					return err
				}
			}
		}
	}
	for _, u := range rt.opts.MCPUses {
		if u.Server == server {
			if err := rt.checkFilters(server, u.Include, nil, "application code"); err != nil {
				return err
			}
		}
	}
	return nil
}
