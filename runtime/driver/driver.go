// Package driver is the contract between heddle's runtime and the live
// halves of grant kinds, as database/sql/driver is between database/sql and
// database drivers. Applications use package runtime; a kind's live half
// implements this package's interfaces and imports it, never runtime.
//
// A kind opens what a plan declares for it (Kind.Open, under the start-up
// deadline), reports each dependency it opened (Instance.Status) and gives
// each grant a Source of tools. What only some sources can do is an
// optional capability, found by type assertion: TimedSource, CappedSource,
// FallibleSource, RecheckingSource, ClassifyingSource,
// ConcurrencyLimitedSource; of instances: Rechecker and Pinner; and of
// kinds: Reopener. Every kind brings a dependency back with the one
// Supervisor, and makes its requests' spans with the helpers here. What
// only one kind can do is that kind's own, reached through its package
// (the mcp kind's direct handle on a server, for one).
//
// A kind's own settings — an MCP client's elicitation handler, the
// servers application code reaches directly — are fields of its Kind value,
// set where the set of kinds is built (package builtin). Env carries what
// every kind shares.
package driver

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/secrets"
)

// Kind is the live half of a grant kind: mcp, usecase, sql, a2a, or one an
// application adds. A set of kinds (package builtin) pairs it with its config
// half; the compiler never imports it, and the runtime names none.
type Kind interface {
	// Open opens what the plan declares for the kind — sessions, connection
	// pools, a remote agent's card — once per runtime, under the start-up
	// deadline (ctx, which ends a margin before env.Deadline so that a slow
	// dependency names itself) and concurrently with the other kinds. A
	// dependency that cannot be opened is a Failure, Fatal when it is
	// required; an error aborts start-up whatever the required setting (a
	// secret that does not resolve, a database that would accept writes).
	// Whatever Open returns, the runtime closes the Instance when start-up
	// fails.
	Open(ctx context.Context, env Env) (Instance, []*Failure, error)
}

// Env is what every kind's Open gets from the runtime: the plan and the
// worker's facilities. It is built once per runtime, every default filled
// in (Logger, Secrets, Closing, LookupEnv, ClientName, TracerProvider, …):
// a kind defaults nothing. What only one kind uses is a field of that
// kind's Kind value, not of Env.
type Env struct {
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
	// Pins are the kind's part of heddle.lock (see Pinner); nil when the
	// runtime was opened without a lock.
	Pins Pins
	// TracerProvider makes the spans of the kind's requests, children of
	// the call's execute_tool span in ctx; TraceContent allows arguments
	// and results in them.
	TracerProvider trace.TracerProvider
	TraceContent   bool
}

// Instance is a kind opened for one runtime.
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
// assertion. Tools and Call are called concurrently; implementations must
// be safe for that.
//
// A source's tools change only when its kind says so through Env.Events: a
// toolset asks for them again only after an event, which keeps the call
// path free of the source's locks.
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
	Call(ctx context.Context, tool *mcp.Tool, args map[string]any, opts CallOptions) (*mcp.CallToolResult, error)
}

// CallOptions are what the caller of one call asked for besides its
// arguments.
type CallOptions struct {
	// Progress, when set, is told of the call's progress notifications.
	Progress func(Progress)
	// Input, when set, hands the caller the input a server asks for
	// during the call, rather than the kind answering it. Kinds whose
	// sources never ask for input ignore it.
	Input *Input
}

// Input is a caller's part in a server's requests for input during a call
// (MCP 2026-07-28's input_required results: multi-round-trip requests),
// when the caller's own client answers them (the MCP facade's host). A
// call given Input returns a server's input_required result as its result
// (InputRequests and RequestState set) instead of answering it with the
// kind's own handlers; the caller asks its client and resumes the call
// with a new one carrying State and Responses.
type Input struct {
	// Capabilities are the client capabilities of whoever answers, in the
	// wire form of _meta's io.modelcontextprotocol/clientCapabilities: the
	// request carries them, so that a server asks only what can be
	// answered. nil sends the kind's own.
	Capabilities any
	// State and Responses resume a call: the requestState the server gave
	// with its input_required result, and the answers to its
	// inputRequests, by their ids.
	State     string
	Responses mcp.InputResponseMap
}

// Progress is one progress notification of a call.
type Progress struct {
	Progress, Total float64
	Message         string
}

// TimedSource is a source with a wait of its own for one call (a server's
// timeout_ms): past it the model reads a TRANSPORT_TIMEOUT refusal it may
// retry. A source without one is bounded by the agent's tool_timeout_ms
// alone.
type TimedSource interface {
	Timing() Timing
}

// Timing is a TimedSource's wait for one call. A source's call reads the
// whole of its answer before it returns: the call's context is cancelled
// as soon as it does.
type Timing struct {
	// Timeout is the wait for one call.
	Timeout time.Duration
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

// Rechecker is an Instance whose dependencies can be re-checked on demand
// (the health probe's recheck).
type Rechecker interface {
	// Recheck has an attempt made now for every dependency that is not
	// ready, and waits, within ctx, until each has ended.
	Recheck(ctx context.Context)
}

// Reopener is a Kind that can open a new generation of its instance from
// the one before: it adopts the live dependencies whose connection did not
// change (the mcp kind keeps such a server's session and process) and
// opens only what is new or changed. A kind that is not a Reopener is
// opened afresh on a reload.
type Reopener interface {
	// Reopen is Open, given the previous generation's instance of the
	// kind. What it adopts must stay usable by prev's generation until
	// prev is closed, and must outlive prev's Close: the kind counts its
	// holders.
	Reopen(ctx context.Context, env Env, prev Instance) (Instance, []*Failure, error)
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
	// Agents are the agents granting it; empty for a dependency only
	// application code reaches.
	Agents []string `json:"agents,omitempty"`
}

// Failure is one dependency that failed start-up.
type Failure struct {
	// Name names the dependency: an MCP server, SQL source, remote agent.
	Name string
	// Kind is the grant kind it belongs to ("mcp" for servers); the runtime
	// fills it in for a kind's failures that leave it empty.
	Kind  string
	Err   error // carries the code
	Fatal bool
}

// Events is how a kind tells the runtime that a dependency's tools changed
// (an MCP server's list_changed, a reconnect). It is safe for concurrent
// use.
type Events interface {
	// Stale says that dep's tools may have changed: toolsets ask its
	// sources for their tools again before the next lookup.
	Stale(dep string)
	// Changed reports a new listing of dep's tools that differs from the
	// last (old; nil for the first): toolsets rebuild, and watchers get one
	// event per tool added, removed or updated since old.
	Changed(dep string, old, cur []*mcp.Tool)
	// Watched reports whether anyone watches, so that a kind may re-list
	// at once rather than on the next use.
	Watched() bool
}
