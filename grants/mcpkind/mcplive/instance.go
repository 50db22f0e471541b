// Package mcplive is the live half of the mcp capability kind: one shared
// client per MCP server per runtime — a session over Streamable HTTP, SSE or
// stdio, its cached tool list, its auth strategy — opened under the runtime's
// start-up deadline, kept alive by the runtime's supervisor, and offered to
// every agent that grants the server through the filters of its grants.
//
// The built-in set (package builtin) pairs it with the config half
// (grants/mcpkind); an application that links builtin has it. Its settings
// are Kind's fields. Application code reaches a server directly through a
// Handle (NewHandle), and has servers list their tools again with Refresh:
// both take the runtime, whose mcp instance they use.
//
// # Start-up
//
// Open resolves each needed server's secrets and builds its auth strategy
// once, then connects every server concurrently and lists its tools. A
// server that cannot be reached is MCP_SERVER_UNREACHABLE, and one that
// connects but cannot list its tools MCP_LIST_FAILED: fatal when it is
// required; an optional one is handed to its supervisor. Once every server
// answered, each one's listing is checked against heddle.lock
// (TOOL_DEFINITION_CHANGED) and against the include/exclude patterns of
// every grant and declared use (MCP_FILTER_UNMATCHED).
//
// A server declared connect: lazy is not connected then: its tools are
// offered from heddle.lock and it is idle until its first call, or
// Runtime.Refresh, connects it (see lazy.go); one the lock does not pin is
// MCP_LAZY_UNPINNED.
//
// # Afterwards
//
// A server is ready while it has a session over which its tools were
// listed. One that loses its session, or cannot list its tools again
// (after a list_changed or a reconnect), is down at once and its
// supervisor brings it back; meanwhile its tools are left out of the
// toolsets' listings and answer TOOL_UNAVAILABLE, and every other server is
// untouched. A call that finds a server down re-checks it first (the
// supervisor makes an attempt now, and the call waits a moment for it), so
// that a server that is back serves the call whatever the backoff says.
package mcplive

//lint:file-ignore SA1019 sampling is deprecated from protocol 2026-07-28 on, but servers of earlier revisions still send it; Kind.Sampling serves them.

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/grants/mcpkind/internal/childproc"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
)

// Kind is the live half of the mcp kind. Its fields are the kind's own
// settings, set where the set of kinds is built (package builtin); the
// zero Kind declines elicitation and sampling, dials the plan's
// transports, and opens no server for application code.
type Kind struct {
	// Elicitation answers servers' elicitation requests. nil declines.
	Elicitation func(ctx context.Context, server string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	// Sampling answers servers' sampling requests (revisions before
	// 2026-07-28 send them). nil declines.
	Sampling func(ctx context.Context, server string, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	// Dial, when set, supplies the transport of every connection attempt to
	// the server it names, instead of the plan's (tests use in-memory
	// transports through it).
	Dial func(server string) mcp.Transport
	// Uses, when set, returns the servers application code reaches
	// directly (through a Handle): they are opened, verified and
	// health-checked like an agent's grants. It is called once per Open.
	Uses func() []Use
	// Eager connects the servers declared connect: lazy at start-up like
	// the others, with no need for their pins: heddle lock does, to pin
	// what they offer.
	Eager bool
	// OnOperation, when set, is told of every request sent to a server
	// (for metrics). It runs on the sender's goroutine and must not block.
	OnOperation func(Operation)
}

// Use declares one direct use of a server by application code.
type Use struct {
	Server  string
	Include []string
	// ToolTimeout is the supervisor's deadline of one call through a
	// handle on Server, as policies.tool_timeout_ms is an agent's: past it
	// the call fails TOOL_TIMEOUT. Default 25s (tool_timeout_ms's
	// default); the smallest of several uses of one server applies.
	ToolTimeout time.Duration
}

// Operation describes one request heddle sent to an MCP server, for the
// mcp.client.operation.duration metric (Kind.OnOperation). It carries
// names and codes only.
type Operation struct {
	Server string
	// Method is the request's MCP method: initialize, tools/list,
	// tools/call, …
	Method string
	// Transport is network.transport: pipe (stdio) or tcp.
	Transport string
	// ErrorType is "" for a request that succeeded, else its error.type
	// (tool_error, a JSON-RPC error code, timeout, a heddle code).
	ErrorType string
	Duration  time.Duration
}

// instance is the mcp kind opened for one runtime: one server per granted
// or declared MCP server. It is safe for concurrent use.
type instance struct {
	env      driver.Env
	kind     Kind  // the settings it was opened with
	uses     []Use // kind.Uses(), once
	log      *slog.Logger
	tp       trace.TracerProvider
	tracer   trace.Tracer
	specs    mcpkind.Servers
	servers  map[string]*server
	releases []func() // in the order the servers finished opening: Close goes backwards

	mu      sync.Mutex
	sources map[string]*source // agent + "\x00" + server → the agent's view
}

// Open opens every server an agent grants or application code declares
// (Kind.Uses): secrets, auth and connection all concurrent, each
// under ctx; then, when none failed fatally, it lists and verifies them
// until env.Deadline (with a fresh budget when an optional server failed,
// since its failure may have spent it).
func (k Kind) Open(ctx context.Context, env driver.Env) (driver.Instance, []*driver.Failure, error) {
	return k.open(ctx, env, nil)
}

// open is Open, adopting from prev (nil at start-up) every server whose
// connection is unchanged (Reopen).
func (k Kind) open(ctx context.Context, env driver.Env, prev *instance) (driver.Instance, []*driver.Failure, error) {
	inst := &instance{env: env, kind: k, log: env.Logger, specs: mcpkind.PlanServers(env.Plan),
		servers: map[string]*server{}, sources: map[string]*source{}}
	if k.Uses != nil {
		inst.uses = k.Uses()
	}
	inst.tp, inst.tracer = tracerOf(env)
	names, err := inst.needed()
	if err != nil {
		return inst, nil, err
	}
	failures := inst.openServers(ctx, names, prev)
	tolerated := false
	for _, f := range failures {
		if f.Fatal {
			return inst, failures, nil
		}
		tolerated = true
		inst.servers[f.Name].sup.Wake()
	}
	vctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), env.Deadline)
	if tolerated {
		vctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), env.Budget)
	}
	defer cancel()
	failures = append(failures, inst.verify(vctx)...)
	if slices.ContainsFunc(failures, func(f *driver.Failure) bool { return f.Fatal }) {
		return inst, failures, nil
	}
	// Start-up is over: from now on a server that is not ready is its
	// supervisor's.
	for _, s := range inst.servers {
		s.opened()
	}
	return inst, failures, nil
}

// needed returns the servers to open: every server an agent grants, and
// every server application code declared in Kind.Uses.
func (i *instance) needed() ([]string, error) {
	set := map[string]bool{}
	for _, a := range i.env.Plan.Agents {
		for _, g := range a.Grants {
			if mg, ok := g.Spec.(*mcpkind.Grant); ok {
				set[mg.Server] = true
			}
		}
	}
	for _, u := range i.uses {
		if i.specs[u.Server] == nil {
			return nil, diag.New(diag.MCPServerUnknown, "application code uses server %q, which the deployment does not declare", u.Server)
		}
		set[u.Server] = true
	}
	names := slices.Sorted(maps.Keys(set))
	for _, n := range names {
		if i.specs[n] == nil {
			return nil, diag.New(diag.MCPServerUnknown, "server %q is granted but not in the plan", n)
		}
	}
	return names, nil
}

// openServers opens every server concurrently, but those it adopts from
// prev; it returns the failures.
func (i *instance) openServers(ctx context.Context, names []string, prev *instance) []*driver.Failure {
	failures := make([]*driver.Failure, len(names))
	var (
		g  errgroup.Group
		mu sync.Mutex
	)
	for n, name := range names {
		if release, ok := i.adopt(prev, name); ok {
			mu.Lock()
			i.releases = append(i.releases, release)
			mu.Unlock()
			continue
		}
		s := i.newServer(name)
		i.servers[name] = s
		release, _ := s.acquire()
		g.Go(func() error {
			failures[n] = s.open(ctx)
			mu.Lock()
			i.releases = append(i.releases, release)
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	return slices.DeleteFunc(failures, func(f *driver.Failure) bool { return f == nil })
}

// open prepares and connects one server at start-up, and lists its tools at
// once, overlapping other servers' handshakes (a listing that fails here is
// tried again, and reported, by verify).
func (s *server) open(ctx context.Context) *driver.Failure {
	if err := s.prepare(ctx); err != nil {
		return &driver.Failure{Name: s.name, Kind: "mcp", Err: err, Fatal: true}
	}
	if s.lazy {
		return s.openIdle()
	}
	// A handshake still running after slowStartup is said, so that a
	// start-up waiting in silence names what it waits for.
	slow := time.AfterFunc(slowStartup, func() {
		if ctx.Err() == nil {
			s.log.Warn("start-up is waiting for the server's handshake", "server", s.name, "waited", slowStartup.String(),
				"startup_timeout_ms", s.inst.env.Budget.Milliseconds())
		}
	})
	err := s.connect(ctx)
	slow.Stop()
	if err != nil {
		return &driver.Failure{Name: s.name, Kind: "mcp", Err: err, Fatal: s.spec.Required}
	}
	if _, _, err := s.refresh(ctx, true); err != nil && !s.connected() {
		// The connection was lost while listing (the server crashed):
		// verify lists only servers that are connected, so this one
		// fails start-up here, as one that could not connect does.
		return &driver.Failure{Name: s.name, Kind: "mcp", Err: err, Fatal: s.spec.Required}
	}
	return nil
}

// slowStartup is how long a server's start-up handshake runs before it is
// logged, at WARN, that start-up waits for it.
const slowStartup = 2 * time.Second

// opened ends start-up for a server: what finds it down from now on wakes
// its supervisor, and a server that is not ready already has it woken.
func (s *server) opened() {
	s.mu.Lock()
	s.opening = false
	ready := s.state == driver.StateReady || s.state == driver.StateIdle
	s.mu.Unlock()
	if !ready {
		s.sup.Wake()
	}
}

// maxIdleConnsPerServer is how many idle connections a server's HTTP
// transport keeps.
const maxIdleConnsPerServer = 64

func (i *instance) newServer(name string) *server {
	spec := i.specs[name]
	s := &server{inst: i, spec: spec, name: name, log: i.log, state: driver.StateConnecting, since: time.Now(), opening: true, owners: []*instance{i},
		lazy: spec.Connect == mcpkind.ConnectLazy && !i.kind.Eager}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.sup = driver.NewSupervisor(s.ctx, s.reconnect, nil)
	s.slots = newSlots(name, spec.MaxConcurrent)
	s.stderr = childproc.NewStderrLog(i.log, name)
	if spec.Transport != mcpkind.TransportStdio {
		s.httpT = http.DefaultTransport.(*http.Transport).Clone()
		// Every agent's calls to the server share this transport: keep as
		// many idle connections as calls commonly run at once, not
		// net/http's two, or concurrent calls dial and drop connections.
		s.httpT.MaxIdleConnsPerHost = maxIdleConnsPerServer
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: i.env.ClientName, Version: i.env.ClientVersion}, &mcp.ClientOptions{
		Logger:                      i.log,
		Capabilities:                i.capabilities(),
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { s.markStale(); s.relist() },
		ProgressNotificationHandler: s.progress,
		ElicitationHandler:          i.elicitationHandler(name),
		CreateMessageHandler:        i.samplingHandler(name),
		// A server's input_required results are answered by the source
		// (answer), or handed to a caller that answers them itself.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	s.peerAttrs = peerAttributes(spec)
	s.client.AddSendingMiddleware(s.traced)
	return s
}

func (i *instance) capabilities() *mcp.ClientCapabilities {
	caps := &mcp.ClientCapabilities{}
	if i.kind.Elicitation != nil {
		caps.Elicitation = &mcp.ElicitationCapabilities{}
	}
	if i.kind.Sampling != nil {
		caps.Sampling = &mcp.SamplingCapabilities{}
	}
	return caps
}

func (i *instance) elicitationHandler(name string) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if i.kind.Elicitation == nil {
		return nil
	}
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return i.kind.Elicitation(ctx, name, req)
	}
}

func (i *instance) samplingHandler(name string) func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if i.kind.Sampling == nil {
		return nil
	}
	return func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return i.kind.Sampling(ctx, name, req)
	}
}

// answer answers the input a server asked for during a call
// (input_required): an elicitation with Kind.Elicitation, or declined
// without it; a sampling request with Kind.Sampling; a roots request with
// no roots (heddle offers none). A request that cannot be answered — a
// sampling request without Kind.Sampling, or one with tools, which it
// cannot take — refuses the call with MCP_INPUT_UNANSWERED.
func (i *instance) answer(ctx context.Context, server string, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	out := make(mcp.InputResponseMap, len(reqs))
	for _, id := range slices.Sorted(maps.Keys(reqs)) {
		switch p := reqs[id].(type) {
		case *mcp.ElicitParams:
			if i.kind.Elicitation == nil {
				out[id] = &mcp.ElicitResult{Action: "decline"}
				continue
			}
			res, err := i.kind.Elicitation(ctx, server, &mcp.ElicitRequest{Params: p})
			if err != nil {
				return nil, diag.Wrap(diag.MCPInputUnanswered, err, "server %s asked for input (%s) and it could not be given", server, diag.Clip(id))
			}
			out[id] = res
		case *mcp.CreateMessageParams:
			res, err := i.sample(ctx, server, id, p)
			if err != nil {
				return nil, err
			}
			out[id] = res
		case *mcp.CreateMessageWithToolsParams:
			base, ok := baseSampling(p)
			if !ok {
				return nil, diag.New(diag.MCPInputUnanswered, "server %s asked for sampling with tools or several contents per message (%s), which heddle cannot give", server, diag.Clip(id))
			}
			res, err := i.sample(ctx, server, id, base)
			if err != nil {
				return nil, err
			}
			out[id] = res
		case *mcp.ListRootsParams:
			out[id] = &mcp.ListRootsResult{Roots: []*mcp.Root{}}
		default:
			return nil, diag.New(diag.MCPInputUnanswered, "server %s asked for input of a kind heddle does not know (%s)", server, diag.Clip(id))
		}
	}
	return out, nil
}

// sample answers one sampling request with Kind.Sampling.
func (i *instance) sample(ctx context.Context, server, id string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if i.kind.Sampling == nil {
		return nil, diag.New(diag.MCPInputUnanswered, "server %s asked for sampling (%s), and this runtime has no sampling handler", server, diag.Clip(id))
	}
	res, err := i.kind.Sampling(ctx, server, &mcp.CreateMessageRequest{Params: p})
	if err != nil {
		return nil, diag.Wrap(diag.MCPInputUnanswered, err, "server %s asked for sampling (%s) and it could not be given", server, diag.Clip(id))
	}
	return res, nil
}

// baseSampling is a sampling request with tools in the form Kind.Sampling
// takes, when it has no tools and one content per message.
func baseSampling(p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageParams, bool) {
	if len(p.Tools) > 0 || p.ToolChoice != nil {
		return nil, false
	}
	msgs := make([]*mcp.SamplingMessage, 0, len(p.Messages))
	for _, m := range p.Messages {
		if m == nil || len(m.Content) != 1 {
			return nil, false
		}
		msgs = append(msgs, &mcp.SamplingMessage{Role: m.Role, Content: m.Content[0]})
	}
	return &mcp.CreateMessageParams{Meta: p.Meta, IncludeContext: p.IncludeContext, MaxTokens: p.MaxTokens, Messages: msgs,
		Metadata: p.Metadata, ModelPreferences: p.ModelPreferences, StopSequences: p.StopSequences, SystemPrompt: p.SystemPrompt, Temperature: p.Temperature}, true
}

// prepare resolves the server's secrets and builds its auth strategy, once.
func (s *server) prepare(ctx context.Context) error {
	env := s.inst.env
	if s.spec.Transport == mcpkind.TransportStdio {
		declared := map[string]string{}
		var hide []string
		for _, k := range slices.Sorted(maps.Keys(s.spec.Env)) {
			v := s.spec.Env[k]
			if v.Ref == nil {
				declared[k] = v.Literal
				continue
			}
			val, err := env.Secrets.Resolve(ctx, *v.Ref)
			if err != nil {
				return fmt.Errorf("server %s: env %s: %w", s.name, k, err)
			}
			declared[k] = val.Reveal()
			hide = append(hide, val.Reveal())
		}
		s.env = childproc.Env(env.LookupEnv, declared)
		s.mu.Lock()
		s.hide = hide
		s.mu.Unlock()
		return nil
	}
	headers, err := s.headersStrategy(ctx)
	if err != nil {
		return err
	}
	aenv := authlive.EnvFor(env, "mcp", "server "+s.name)
	aenv.Logger = s.log // the server's, which names it
	aenv.URL = s.spec.URL
	strat, err := authlive.Build(ctx, aenv, s.spec.Auth)
	if err != nil {
		return err
	}
	s.strat, s.headers = strat, headers
	return nil
}

// headersStrategy resolves the server's headers: map and returns the
// strategy that sets them on every request, or nil when it has none. A
// reference that does not resolve is SECRET_UNRESOLVED or SECRET_EMPTY; one
// whose value cannot be a header value (a line break) is
// MCP_HEADERS_REF_INVALID, the value not shown. References are read again
// on a 401, as headers_ref's are.
func (s *server) headersStrategy(ctx context.Context) (authlive.Strategy, error) {
	if len(s.spec.Headers) == 0 {
		return nil, nil
	}
	load := func(ctx context.Context) (http.Header, error) {
		h := make(http.Header, len(s.spec.Headers))
		for _, name := range slices.Sorted(maps.Keys(s.spec.Headers)) {
			v := s.spec.Headers[name]
			if v.Ref == nil {
				h[name] = []string{v.Value}
				continue
			}
			val, err := s.inst.env.Secrets.Resolve(ctx, *v.Ref)
			if err != nil {
				return nil, fmt.Errorf("server %s: headers %s: %w", s.name, name, err)
			}
			if strings.ContainsAny(val.Reveal(), "\r\n\x00") {
				return nil, diag.New(diag.MCPHeadersRefInvalid, "server %s: headers %s: the value holds a line break or a NUL (value not shown)", s.name, name)
			}
			h[name] = []string{val.Reveal()}
		}
		return h, nil
	}
	h, err := load(ctx)
	if err != nil {
		return nil, err
	}
	for _, v := range s.spec.Headers {
		if v.Ref != nil {
			return authlive.Headers(h, load), nil
		}
	}
	return authlive.Headers(h, nil), nil
}

// verify lists the tools of every server that connected and could not be
// listed in the first phase, and checks them against the lock, and each
// grant's and declared use's filters against them. A server that cannot
// list its tools is MCP_LIST_FAILED, fatal when it is required (a required
// server's listing that does not finish in time is STARTUP_TIMEOUT); an
// optional one is tolerated, and its supervisor lists it again.
func (i *instance) verify(ctx context.Context) []*driver.Failure {
	var (
		mu       sync.Mutex
		failures []*driver.Failure
		g        errgroup.Group
	)
	for _, name := range slices.Sorted(maps.Keys(i.servers)) {
		s, required := i.servers[name], i.specs[name].Required
		if !s.connected() {
			continue // a failure of the first phase: its supervisor connects it
		}
		g.Go(func() error {
			var err error
			if s.status().state != driver.StateReady {
				if _, _, err = s.refresh(ctx, true); err == nil {
					err = s.readyErr()
				}
			}
			fatal := true
			switch {
			case err != nil && ctx.Err() != nil && required:
				err = diag.Wrap(diag.StartupTimeout, err, "server %s: listing its tools did not finish within ai.startup_timeout_ms", name)
			case err != nil && ctx.Err() != nil:
				err, fatal = s.listTimedOut(err), false
			case err != nil:
				fatal = required
			default:
				err = i.checkLock(s)
			}
			if err != nil {
				mu.Lock()
				failures = append(failures, &driver.Failure{Name: name, Kind: "mcp", Fatal: fatal, Err: err})
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	slices.SortFunc(failures, func(a, b *driver.Failure) int { return strings.Compare(a.Name, b.Name) })
	if slices.ContainsFunc(failures, func(f *driver.Failure) bool { return f.Fatal }) {
		return failures
	}
	for _, name := range slices.Sorted(maps.Keys(i.servers)) {
		for _, err := range i.checkServerFilters(name, true) {
			failures = append(failures, &driver.Failure{Name: name, Kind: "mcp", Err: err, Fatal: true})
		}
	}
	return failures
}

// checkServerFilters checks every grant's and declared use's filters over
// one server, agents first; all reports every unmatched filter rather than
// the first.
func (i *instance) checkServerFilters(server string, all bool) []error {
	var errs []error
	for _, agent := range slices.Sorted(maps.Keys(i.env.Plan.Agents)) {
		for _, g := range i.env.Plan.Agents[agent].Grants {
			if mg, ok := g.Spec.(*mcpkind.Grant); ok && mg.Server == server {
				if err := i.checkFilters(server, mg.Include, mg.Exclude, "agent "+agent+agentFile(i.env.Plan.Agents[agent].File)); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	for _, u := range i.uses {
		if u.Server == server {
			if err := i.checkFilters(server, u.Include, nil, "application code"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := i.checkOverrides(server); err != nil {
		errs = append(errs, err)
	}
	if !all && len(errs) > 1 {
		errs = errs[:1]
	}
	return errs
}

// checkFilters reports patterns that match none of an opened server's tools.
func (i *instance) checkFilters(server string, include, exclude []string, who string) error {
	if bad, n := i.unmatched(server, slices.Concat(include, exclude)); len(bad) > 0 {
		return diag.New(diag.MCPFilterUnmatched, "server %s: %s: filter %s matches none of its %d tools: %s", server, who, strings.Join(bad, ", "), n, i.toolNames(server))
	}
	return nil
}

// agentFile is " (FILE)" for an agent's file, "" when the plan has none.
func agentFile(file string) string {
	if file == "" {
		return ""
	}
	return " (" + file + ")"
}

// toolNames names an opened server's tools, sorted, at most twenty of them.
func (i *instance) toolNames(server string) string {
	s := i.servers[server]
	s.mu.Lock()
	names := make([]string, 0, len(s.tools))
	for _, t := range s.tools {
		names = append(names, t.Name)
	}
	s.mu.Unlock()
	slices.Sort(names)
	const most = 20
	if len(names) > most {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
	}
	return strings.Join(names, ", ")
}

// checkOverrides reports the server's classification overrides (its
// tools: keys and its read_only_tools, idempotent_tools and
// destructive_tools) that match none of its tools: an override that
// matches nothing is how a tool quietly keeps the claim an operator meant
// to overrule, such as not being destructive.
func (i *instance) checkOverrides(server string) error {
	spec := i.servers[server].spec
	var (
		bad []string
		n   int
	)
	for _, list := range []struct {
		key  string
		pats []string
	}{
		{"tools", slices.Sorted(maps.Keys(spec.Tools))},
		{"read_only_tools", spec.ReadOnlyTools},
		{"idempotent_tools", spec.IdempotentTools},
		{"destructive_tools", spec.DestructiveTools},
	} {
		var b []string
		if b, n = i.unmatched(server, list.pats); len(b) > 0 {
			bad = append(bad, list.key+" "+strings.Join(b, ", "))
		}
	}
	if len(bad) > 0 {
		return diag.New(diag.MCPFilterUnmatched, "server %s: override %s matches none of its %d tools", server, strings.Join(bad, "; "), n)
	}
	return nil
}

// unmatched returns, quoted, the patterns that match none of an opened
// server's tools, and how many tools it has; nothing for a server that is
// not open.
func (i *instance) unmatched(server string, pats []string) (bad []string, tools int) {
	s := i.servers[server]
	if st := s.status().state; st != driver.StateReady && st != driver.StateIdle {
		return nil, 0
	}
	s.mu.Lock()
	offered := s.tools
	s.mu.Unlock()
	for _, pat := range pats {
		if !slices.ContainsFunc(offered, func(t *mcp.Tool) bool { return globMatch(pat, t.Name) }) {
			bad = append(bad, fmt.Sprintf("%q", pat))
		}
	}
	return bad, len(offered)
}

// checkLock verifies a server's listing against the lock at start-up.
func (i *instance) checkLock(s *server) error {
	if i.env.Pins == nil {
		return nil
	}
	s.mu.Lock()
	tools := s.tools
	s.mu.Unlock()
	changed, added := i.env.Pins.Diff(s.name, tools)
	if len(added) > 0 {
		i.log.Warn("server offers tools heddle.lock does not pin", "server", s.name, "tools", strings.Join(added, ","))
	}
	if len(changed) > 0 {
		return diag.New(diag.ToolDefinitionChanged, "server %s: tools changed since heddle.lock was written: %s", s.name, strings.Join(changed, ", "))
	}
	return nil
}

// relist runs when a server announces list_changed. The next operation
// re-lists it; when someone watches one of the runtimes that hold it, a
// background re-list delivers the events without waiting for one.
func (s *server) relist() {
	if !slices.ContainsFunc(s.owning(), func(o *instance) bool { return o.env.Events.Watched() }) {
		return
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, s.inst.env.Budget)
		defer cancel()
		_, _, _ = s.refresh(ctx, false)
	}()
}

// reconnected runs after the supervisor made a server ready again: its
// filters are verified against what it offers now.
func (i *instance) reconnected(s *server) {
	if errs := i.checkServerFilters(s.name, false); len(errs) > 0 {
		i.log.Error("filter matches no tool after reconnect", "server", s.name, "code", diag.CodeOf(errs[0]), "detail", errs[0].Error())
	}
}

// Source returns an agent's view of one granted server. Several grants of
// one server in one agent are one source whose filters are united.
func (i *instance) Source(agent *plan.Agent, g plan.Grant) (driver.Source, error) {
	spec, ok := g.Spec.(*mcpkind.Grant)
	if !ok {
		return nil, diag.New(diag.CapabilityKindUnknown, "agent %s: mcp grant has an unexpected spec", agent.Name)
	}
	s := i.servers[spec.Server]
	if s == nil {
		return nil, diag.New(diag.MCPServerUnknown, "server %q is not opened", spec.Server)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	key := agent.Name + "\x00" + spec.Server
	if src := i.sources[key]; src != nil {
		src.addFilter(grantFilter{include: spec.Include, exclude: spec.Exclude})
		return src, nil
	}
	src := &source{srv: s, inst: i, filters: []grantFilter{{include: spec.Include, exclude: spec.Exclude}}}
	i.sources[key] = src
	return src, nil
}

// Status reports every opened server as a dependency of kind mcp.
func (i *instance) Status() []driver.Dependency {
	out := make([]driver.Dependency, 0, len(i.servers))
	for _, name := range slices.Sorted(maps.Keys(i.servers)) {
		s, spec := i.servers[name], i.specs[name]
		st := s.status()
		since := st.since.UTC().Truncate(time.Millisecond)
		d := driver.Dependency{Name: name, Kind: "mcp", State: st.state, Since: &since, Required: spec.Required, Tools: st.tools, Agents: slices.Clone(spec.GrantedTo)}
		if st.state != driver.StateReady && st.state != driver.StateIdle {
			d.Code, d.Reason = st.code, st.reason
			if d.Code == "" {
				d.Code = diag.MCPServerUnreachable
			}
		}
		if !st.listedAt.IsZero() {
			t := st.listedAt.UTC().Truncate(time.Millisecond)
			d.ListedAt = &t
		}
		out = append(out, d)
	}
	return out
}

// Recheck has the supervisor of every server that is not ready make an
// attempt now, and waits, within ctx, until each has ended.
func (i *instance) Recheck(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range i.servers {
		if st := s.status().state; st != driver.StateReady && st != driver.StateIdle {
			wg.Go(func() { _ = s.sup.Recheck(ctx) })
		}
	}
	wg.Wait()
}

// Pins returns what each opened server offers now, for the lock.
func (i *instance) Pins() map[string][]*mcp.Tool {
	out := make(map[string][]*mcp.Tool, len(i.servers))
	for name, s := range i.servers {
		s.mu.Lock()
		out[name] = s.tools
		s.mu.Unlock()
	}
	return out
}

// Close releases the instance's references on every server, one after the
// other in the reverse order of their opening (the last to finish opening
// first): sessions close (and stdio children die with their process
// groups) once the last in-flight call that holds one returns.
func (i *instance) Close() error {
	for _, s := range i.servers {
		s.disown(i)
	}
	for _, release := range slices.Backward(i.releases) {
		release()
	}
	return nil
}

var (
	_ driver.Kind      = Kind{}
	_ driver.Instance  = (*instance)(nil)
	_ driver.Pinner    = (*instance)(nil)
	_ driver.Rechecker = (*instance)(nil)
)
