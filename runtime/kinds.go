package runtime

//lint:file-ignore SA1019 sampling is deprecated from protocol 2026-07-28 on, but servers of earlier revisions still send it; KindEnv.Sampling serves them.

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/secrets"
	"github.com/heddlehq/heddle/toolname"
)

// Kind is the live half of a grant kind: mcp, usecase, sql, a2a, or one an
// application adds. A set of kinds (package builtin) pairs it with its config
// half; the compiler never imports it, and the runtime names none.
type Kind interface {
	// Open opens what the plan declares for the kind — sessions, connection
	// pools, a remote agent's card — once per Runtime, under the start-up
	// deadline (ctx, which ends a margin before env.Deadline so that a slow
	// dependency names itself) and concurrently with the other kinds. A
	// dependency that cannot be opened is a Failure, Fatal when it is
	// required; an error aborts start-up whatever the required setting (a
	// secret that does not resolve, a database that would accept writes).
	// Whatever Open returns, the runtime closes the Instance when start-up
	// fails.
	Open(ctx context.Context, env KindEnv) (Instance, []*Failure, error)
}

// KindEnv is what a kind's Open gets from the runtime: the plan, the
// worker's facilities, and the options an application set for the kinds
// that use them. The runtime fills in every default (Logger, Secrets,
// Closing, LookupEnv, ClientName, …): a kind defaults nothing.
type KindEnv struct {
	Plan    *plan.Plan
	Secrets secrets.Resolver
	Logger  *slog.Logger
	// HTTPTransport is the base transport for HTTP clients; nil means a
	// transport of the kind's own.
	HTTPTransport http.RoundTripper
	// Closing is done when the runtime closes; supervisors stop then.
	Closing context.Context
	// Deadline is start-up's deadline, and Budget its length (the bound of
	// one reconnect attempt later). A step after the handshakes — listing,
	// verifying — may run until Deadline.
	Deadline time.Time
	Budget   time.Duration
	// Events is how a kind tells the runtime that a dependency's tools
	// changed.
	Events Events
	// LookupEnv reads the worker's environment for the allow-list of child
	// processes.
	LookupEnv func(string) (string, bool)
	// ClientName and ClientVersion identify heddle to the peers it calls.
	ClientName, ClientVersion string

	// The options of the MCP protocol's clients (see Options).
	Elicitation func(ctx context.Context, server string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	Sampling    func(ctx context.Context, server string, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	Dial        func(server string) mcp.Transport
	MCPUses     []MCPUse
	Lock        *Lock
	// Eager has dependencies that would be connected on first use
	// connected at start-up instead (see Options.Eager).
	Eager bool

	// TracerProvider makes the spans of the kind's requests, children of
	// the call's execute_tool span in ctx; TraceContent allows arguments
	// and results in them (see Options).
	TracerProvider trace.TracerProvider
	TraceContent   bool
	// OnMCPOperation is told of each request sent to an MCP server; nil
	// when nobody listens.
	OnMCPOperation func(MCPOperation)
}

// Instance is a kind opened for one Runtime.
type Instance interface {
	// Source returns the tool source of one of an agent's grants of the kind.
	Source(agent *plan.Agent, g plan.Grant) (Source, error)
	// Status reports the health of each dependency the kind opened.
	Status() []Dependency
	// Close releases what Open acquired.
	Close() error
}

// Source provides tools to a toolset: the calls every source has. What
// only some sources have is an optional capability, found by type
// assertion: TimedSource, CappedSource, FallibleSource. Tools and Call are
// called concurrently; implementations must be safe for that.
type Source interface {
	// Name is the source as configured: a server, SQL source or remote
	// agent name; the kind's name for use cases. Its sanitized form
	// (characters outside [A-Za-z0-9_-] made _) qualifies clashing tools.
	Name() string
	// Tools returns the source's tools and a generation number that changes
	// when they do. Annotations drive policy: DestructiveHint, ReadOnlyHint,
	// IdempotentHint.
	Tools(ctx context.Context) ([]*mcp.Tool, uint64, error)
	// Call runs one tool. A tool's own failure is a result with IsError; an
	// error carrying a diag code becomes a refusal the model reads.
	Call(ctx context.Context, tool *mcp.Tool, args map[string]any) (*mcp.CallToolResult, error)
}

// TimedSource is a source with a wait of its own for one call (a server's
// timeout_ms): past it the model reads a TRANSPORT_TIMEOUT refusal it may
// retry. A source without one is bounded by the agent's tool_timeout_ms
// alone.
type TimedSource interface {
	TransportTimeout() time.Duration
}

// CappedSource is a source whose results are capped at MaxResultBytes. A
// source without a cap (the application's own operations) is trusted with
// the size of what it returns.
type CappedSource interface {
	MaxResultBytes() int
}

// FallibleSource is a source that can be unavailable: while Down reports
// true, a call to a tool the toolset cannot resolve answers TOOL_UNAVAILABLE
// rather than TOOL_UNKNOWN (the tool may come back with its source).
type FallibleSource interface {
	Down() bool
}

// RecheckingSource is a FallibleSource whose return can be asked for: a
// toolset wakes it when Tools finds it down (its tools are left out then),
// and waits for its re-check before it refuses a call that only its return
// can resolve. Backoff paces a source's attempts; it must never make a
// caller wait for a source that is back (see Supervisor.Recheck).
type RecheckingSource interface {
	FallibleSource
	// Wake asks for an attempt to bring the source back now, without
	// waiting for it.
	Wake()
	// Recheck asks for one and waits for it, within ctx and at most
	// RecheckWait; it reports whether the source is up.
	Recheck(ctx context.Context) bool
}

// LingeringSource is a source whose transport reads the rest of a response
// after handing the result over (Streamable HTTP): a successful call's
// context must stay alive a moment longer, or the connection is dropped
// rather than reused.
type LingeringSource interface {
	Lingers() bool
}

// NotifyingSource is a source whose tools change only when its kind says
// so through KindEnv.Events: a toolset asks it for its tools again only
// after an event, which keeps the call path free of its locks.
type NotifyingSource interface {
	NotifiesChanges()
}

// State is a dependency's connection state, as the health probe reports it.
type State string

const (
	StateConnecting State = "connecting"
	StateReady      State = "ready"
	StateDown       State = "down"
	StateClosed     State = "closed"
	// StateIdle is a dependency that is connected on first use (an MCP
	// server with connect: lazy) and has not been used yet: its tools are
	// offered, and readiness does not wait for it.
	StateIdle State = "idle"
)

// Dependency is one thing the runtime depends on, as health reports it.
type Dependency struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"` // mcp, sql, a2a, …
	State State  `json:"state"`
	// Since is when it entered State; nil when its kind does not say.
	Since *time.Time `json:"since,omitempty"`
	Code  diag.Code  `json:"code,omitempty"` // why it is not ready
	// Reason says in a line why it is not ready — "command
	// /opt/bin/server not found", "connection refused by db:5432" — as
	// [Reason] makes it from the coded error; empty when it is ready, or
	// its kind does not say.
	Reason   string `json:"reason,omitempty"`
	Required bool   `json:"required"`
	Tools    int    `json:"tools"`
	// ListedAt is when its tools were last listed successfully.
	ListedAt *time.Time `json:"last_ok_list_at,omitempty"`
	// Agents are the agents granting it; empty for a server only
	// application code reaches.
	Agents []string `json:"agents,omitempty"`
}

// KindSet is a set of kinds' live halves, keyed by kind name. It is
// immutable and safe for concurrent use. Sets are made by package builtin,
// which pairs each live half with its config half.
type KindSet struct {
	m map[string]Kind
}

// NewKindSet returns a set of live halves. It panics on an empty name or a
// nil kind.
func NewKindSet(kinds map[string]Kind) *KindSet {
	m := make(map[string]Kind, len(kinds))
	for name, k := range kinds {
		if name == "" || k == nil {
			panic(fmt.Sprintf("runtime: NewKindSet with kind %q", name))
		}
		m[name] = k
	}
	return &KindSet{m: m}
}

// Lookup returns the live half of the kind called name.
func (s *KindSet) Lookup(name string) (Kind, bool) {
	if s == nil {
		return nil, false
	}
	k, ok := s.m[name]
	return k, ok
}

// Names returns the set's kinds, sorted.
func (s *KindSet) Names() []string {
	if s == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(s.m))
}

var (
	defaultKindsMu sync.RWMutex
	defaultKinds   *KindSet
)

// SetDefaultKinds makes s the set Open uses when Options.Kinds is nil. The
// built-in set installs itself (package builtin), together with the config
// halves the compiler uses by default. It panics when called twice.
func SetDefaultKinds(s *KindSet) {
	defaultKindsMu.Lock()
	defer defaultKindsMu.Unlock()
	if defaultKinds != nil {
		panic("runtime: SetDefaultKinds called twice")
	}
	defaultKinds = s
}

// DefaultKinds returns the set installed by SetDefaultKinds, or an empty
// set when the program links none.
func DefaultKinds() *KindSet {
	defaultKindsMu.RLock()
	defer defaultKindsMu.RUnlock()
	if defaultKinds == nil {
		return &KindSet{}
	}
	return defaultKinds
}

// kindsToOpen returns the live halves of the kinds the plan's agents grant
// or declares resources for, and an error naming a granted kind the set
// lacks.
func kindsToOpen(p *plan.Plan, set *KindSet) (map[string]Kind, error) {
	out := map[string]Kind{}
	for _, a := range p.Agents {
		for _, g := range a.Grants {
			k, ok := set.Lookup(g.Kind)
			if !ok {
				return nil, diag.New(diag.CapabilityKindUnknown,
					"agent %s grants kind %q, which has no live half in this runtime's set of kinds", a.Name, g.Kind)
			}
			out[g.Kind] = k
		}
	}
	// A kind whose resources only application code reaches (an MCP server
	// a use case calls directly) is opened too; it opens only what is used.
	for _, pt := range p.Parts {
		if k, ok := set.Lookup(pt.Kind); ok {
			out[pt.Kind] = k
		}
	}
	return out, nil
}

// kindSource adapts a kind's Source, and the optional capabilities it
// has, to the toolset's internal source.
type kindSource struct {
	Source
	kindName, prefixName string
	// The optional capabilities, found once.
	timed     TimedSource
	capped    CappedSource
	fallible  FallibleSource
	recheck   RecheckingSource
	lingering bool
	notifying bool
	// deferred: every grant of the toolset this source serves says defer,
	// so its tools are reached through search_tools and load_tools.
	deferred bool

	classifier ClassifyingSource // nil: classified by the tools' annotations

	mu      sync.Mutex
	gen     uint64
	set     bool
	defs    []*toolDef
	listErr error // why the source's tools could not be had, the last time they were asked for
}

func newKindSource(kind string, src Source) *kindSource {
	k := &kindSource{Source: src, kindName: kind, prefixName: toolname.Sanitize(src.Name())}
	k.timed, _ = src.(TimedSource)
	k.capped, _ = src.(CappedSource)
	k.fallible, _ = src.(FallibleSource)
	k.recheck, _ = src.(RecheckingSource)
	k.classifier, _ = src.(ClassifyingSource)
	l, ok := src.(LingeringSource)
	k.lingering = ok && l.Lingers()
	_, k.notifying = src.(NotifyingSource)
	return k
}

func (k *kindSource) kind() string   { return k.kindName }
func (k *kindSource) name() string   { return k.Name() }
func (k *kindSource) prefix() string { return k.prefixName }

// transportTimeout is the source's own wait, or 0 when it has none.
func (k *kindSource) transportTimeout() time.Duration {
	if k.timed == nil {
		return 0
	}
	return k.timed.TransportTimeout()
}

// maxResultBytes is the source's cap, or 0 when results are not capped.
func (k *kindSource) maxResultBytes() int {
	if k.capped == nil {
		return 0
	}
	return k.capped.MaxResultBytes()
}

func (k *kindSource) down() bool { return k.fallible != nil && k.fallible.Down() }

// unavailable reports a source that is down, or whose tools could not be
// had the last time they were asked for.
func (k *kindSource) unavailable() bool {
	if k.down() {
		return true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.listErr != nil
}

// wake asks a source that is down to come back now, if it can be asked.
func (k *kindSource) wake() {
	if k.recheck != nil {
		k.recheck.Wake()
	}
}

// recheckUp waits for a source that is down to be re-checked, and reports
// whether it is up.
func (k *kindSource) recheckUp(ctx context.Context) bool {
	return k.recheck != nil && k.recheck.Recheck(ctx)
}

// lingers and notifies report the source's LingeringSource and
// NotifyingSource capabilities.
func (k *kindSource) lingers() bool  { return k.lingering }
func (k *kindSource) notifies() bool { return k.notifying }

// tools returns the source's tools as definitions, cached per generation.
// When the source cannot give them, it returns the last it gave (none, at
// first) with the error, so that one source's failure costs a toolset that
// source's tools only, and the names of the others stay as they were.
func (k *kindSource) tools(ctx context.Context) ([]*toolDef, uint64, error) {
	tools, gen, err := k.Tools(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			k.listErr = err
		}
		return k.defs, k.gen, err
	}
	k.listErr = nil
	if k.set && k.gen == gen {
		return k.defs, gen, nil
	}
	defs := make([]*toolDef, len(tools))
	for i, t := range tools {
		defs[i] = defOf(t, k.classify(t))
	}
	k.defs, k.gen, k.set = defs, gen, true
	return defs, gen, nil
}

func (k *kindSource) call(ctx context.Context, d *toolDef, args map[string]any, cc *callConfig) (*mcp.CallToolResult, error) {
	if cc.progress != nil {
		ctx = context.WithValue(ctx, progressKey{}, cc.progress)
	}
	return k.Call(ctx, d.tool, args)
}

// defOf is t as a toolset holds it, classified by c.
func defOf(t *mcp.Tool, c Classification) *toolDef {
	return &toolDef{tool: t, destructive: c.Destructive, readOnly: c.ReadOnly, idempotent: c.Idempotent, classifiedBy: c.By}
}
