package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/argcheck"
	"github.com/heddlehq/heddle/internal/calldeadline"
	"github.com/heddlehq/heddle/internal/limits"
	"github.com/heddlehq/heddle/internal/resultcap"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/policy"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/toolname"
)

// Tool is one tool of a toolset as the model and operators see it.
type Tool struct {
	// Name is the model-facing name: unique in the toolset, matching
	// ^[a-zA-Z0-9_-]{1,64}$.
	Name string `json:"name"`
	// Kind is the grant kind the tool comes from: mcp, usecase, sql, a2a.
	Kind string `json:"source"`
	// Server is the MCP server (or SQL source, remote agent) it comes from.
	Server string `json:"server"`
	// OriginalName is the tool's own name at its source.
	OriginalName string `json:"original_name"`
	Description  string `json:"description"`
	InputSchema  any    `json:"input_schema"`
	OutputSchema any    `json:"output_schema,omitempty"`
	Destructive  bool   `json:"destructive"`
	ReadOnly     bool   `json:"read_only"`
	Idempotent   bool   `json:"idempotent"`
	// Deferred is set for the tools of grants that say defer: a View
	// lists them only once load_tools has loaded them (see View).
	Deferred bool `json:"deferred,omitempty"`
	// ClassifiedBy says where Destructive, ReadOnly and Idempotent came
	// from: the tool's source (server), the operator (override), or a
	// source whose claims are not trusted (untrusted).
	ClassifiedBy driver.ClassifiedBy `json:"classified_by"`
	// Flags are what screening the tool's definition found, sorted:
	// hidden_unicode, instructions, shadowing (TOOL_DESCRIPTOR_SUSPICIOUS).
	// Rules see them as tool.flags.
	Flags []string `json:"flags,omitempty"`
}

// toolDef is one tool as a source offers it.
type toolDef struct {
	tool        *mcp.Tool
	destructive bool
	readOnly    bool
	idempotent  bool
	// classifiedBy is where the three flags came from.
	classifiedBy driver.ClassifiedBy
	// flags are what screening its definition found (toolscreen).
	flags []string

	argsOnce sync.Once
	args     *argcheck.Checker // nil: the schema cannot be used; the server judges
}

// Toolset is one agent's view of the runtime: the tools its grants allow,
// with model-facing names. It is safe for concurrent use.
type Toolset struct {
	rt      *Runtime
	agent   *plan.Agent
	policy  *policy.Set
	limits  *limits.Set // nil: none
	timeout time.Duration
	sources []*kindSource

	mu  sync.Mutex
	idx atomic.Pointer[builtIndex]
}

type builtIndex struct {
	names   *nameIndex
	entries []*entry
	gens    []uint64
	// rtGen is the runtime's toolsGen the sources' generations were read
	// under: while it has not moved, no MCP server's tools have.
	rtGen atomic.Uint64
	// search ranks the deferred tools, built on the first search_tools.
	search atomic.Pointer[searchIndex]
}

type entry struct {
	tool Tool
	src  *kindSource
	def  *toolDef
}

// Toolset returns the toolset of an agent of the plan.
func (rt *Runtime) Toolset(agent string) (*Toolset, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return nil, errRuntimeClosed
	}
	if ts, ok := rt.toolsets[agent]; ok {
		return ts, nil
	}
	a, ok := rt.plan.Agents[agent]
	if !ok {
		return nil, diag.New(diag.AgentUnknown, "no agent %s in the plan", diag.Quote(agent))
	}
	pol, ds := policy.New(a.Policies, "policies")
	if ds.HasErrors() {
		return nil, ds.Err()
	}
	lim, lds := limits.New(a.Policies.Limits, "policies.limits")
	if lds.HasErrors() {
		return nil, lds.Err()
	}
	ts := &Toolset{rt: rt, agent: a, policy: pol, limits: lim, timeout: time.Duration(a.Policies.ToolTimeoutMS) * time.Millisecond}
	for _, g := range a.Grants {
		src, err := rt.buildSource(a, g)
		if err != nil {
			return nil, err
		}
		// Two grants of one server are one source (the union of their
		// filters): a kind hands out the same Source for both. It is
		// deferred only when both grants say so.
		if src == nil {
			continue
		}
		if i := slices.IndexFunc(ts.sources, func(o *kindSource) bool { return o.Source == src.Source }); i >= 0 {
			ts.sources[i].deferred = ts.sources[i].deferred && g.Defer
		} else {
			src.deferred = g.Defer
			ts.sources = append(ts.sources, src)
		}
	}
	rt.toolsets[agent] = ts
	return ts, nil
}

// buildSource builds the source of a grant from its kind's opened instance.
func (rt *Runtime) buildSource(a *plan.Agent, g plan.Grant) (*kindSource, error) {
	inst, ok := rt.instances[g.Kind]
	if !ok {
		return nil, diag.New(diag.CapabilityKindUnknown, "agent %s: grant kind %q was not opened", a.Name, g.Kind)
	}
	src, err := inst.Source(a, g)
	if err != nil || src == nil {
		return nil, err
	}
	return newKindSource(g.Kind, src), nil
}

// Agent returns the toolset's agent name.
func (t *Toolset) Agent() string { return t.agent.Name }

// index returns the current name index, rebuilding it when a source's tools
// changed (after list_changed, or a reconnect).
func (t *Toolset) index(ctx context.Context) (*builtIndex, error) {
	// The fast path: no source's tools went stale or changed since the
	// index was built (one atomic load: every kind tells the runtime
	// through driver.Events). The generation is read before the sources, so
	// a change that lands while they are read is seen by the next call.
	rg := t.rt.toolsGen.Load()
	cur := t.idx.Load()
	if cur != nil && cur.rtGen.Load() == rg {
		return cur, nil
	}
	// Up to eight sources, the path that finds nothing changed allocates nothing.
	var defsBuf [8][]*toolDef
	var gensBuf [8]uint64
	defs, gens := defsBuf[:0], gensBuf[:0]
	if n := len(t.sources); n > len(gensBuf) {
		defs, gens = make([][]*toolDef, 0, n), make([]uint64, 0, n)
	}
	defs, gens = defs[:len(t.sources)], gens[:len(t.sources)]
	for i, src := range t.sources {
		// A source that cannot give its tools keeps those it gave last:
		// it is unavailable (Unavailable names it, Tools leaves them out,
		// calls to them are refused), and no other source is touched.
		d, g, err := src.tools(ctx)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		defs[i], gens[i] = d, g
	}
	if cur := t.idx.Load(); cur != nil && equalGens(cur.gens, gens) {
		cur.rtGen.Store(rg)
		return cur, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur := t.idx.Load(); cur != nil && equalGens(cur.gens, gens) {
		cur.rtGen.Store(rg)
		return cur, nil
	}
	var cands []candidate
	var entries []*entry
	for i, src := range t.sources {
		for _, d := range defs[i] {
			cands = append(cands, candidate{prefix: src.prefix(), source: src.name(), original: d.tool.Name})
			entries = append(entries, &entry{src: src, def: d, tool: Tool{
				Kind: src.kind(), Server: src.name(), OriginalName: d.tool.Name,
				Description: d.tool.Description, InputSchema: d.tool.InputSchema, OutputSchema: d.tool.OutputSchema,
				Destructive: d.destructive, ReadOnly: d.readOnly, Idempotent: d.idempotent, ClassifiedBy: d.classifiedBy, Deferred: src.deferred,
			}})
		}
	}
	names, err := buildIndex(cands)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", t.agent.Name, err)
	}
	for i, e := range entries {
		e.tool.Name = names.names[i]
	}
	t.flag(entries)
	bi := &builtIndex{names: names, entries: entries, gens: slices.Clone(gens)}
	bi.rtGen.Store(rg)
	t.idx.Store(bi)
	return bi, nil
}

func equalGens(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Tools returns the tools of the toolset's sources that are available,
// sorted by name. A source that is down does not fail it: its tools are
// left out (Unavailable names it, with the code of why) and its supervisor
// is asked to bring it back now, so that a source that is back is listed
// again by a later call. Names do not change while a source is away: they
// are given over every tool the toolset has known. The error is the
// context's, or TOOL_NAME_CONFLICT. The tools of grants that say defer are
// listed too, with Deferred set: what a model is given is a View's.
//
// When ctx carries a caller (heddle.WithCaller), the tools the agent's
// policies deny that caller whatever the arguments are left out
// (policy.Set.Listed), and Call refuses them TOOL_UNKNOWN, as names that do
// not exist. Without one the list is the operators': every tool.
func (t *Toolset) Tools(ctx context.Context) ([]Tool, error) {
	bi, err := t.index(ctx)
	if err != nil {
		return nil, err
	}
	var away []*kindSource
	for _, src := range t.sources {
		if src.unavailable() {
			away = append(away, src)
			src.wake()
		}
	}
	hidden := t.hiddenFor(ctx)
	out := make([]Tool, 0, len(bi.entries))
	for _, e := range bi.entries {
		if !slices.Contains(away, e.src) && !hidden(e) {
			out = append(out, e.tool)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// hiddenFor says which entries the caller on ctx may never use, whatever
// the arguments (policy.Set.Listed): they are not listed to that caller,
// and their calls are refused as if they did not exist. A context with no
// caller (the command line without --as, an application's own jobs) is an
// operator's, for whom nothing is hidden.
func (t *Toolset) hiddenFor(ctx context.Context) func(*entry) bool {
	caller, ok := heddle.LookupCaller(ctx)
	if !ok {
		return func(*entry) bool { return false }
	}
	return func(e *entry) bool { return !t.policy.Listed(ctx, e.policyTool(), caller) }
}

// policyTool is the tool as rules see it.
func (e *entry) policyTool() policy.Tool {
	return policy.Tool{Name: e.tool.Name, OriginalName: e.tool.OriginalName, Server: e.tool.Server, Kind: e.tool.Kind,
		Destructive: e.tool.Destructive, ReadOnly: e.tool.ReadOnly, Idempotent: e.tool.Idempotent, ClassifiedBy: string(e.tool.ClassifiedBy),
		Flags: e.tool.Flags}
}

// Unavailable lists the toolset's sources that are unavailable — MCP
// servers, SQL sources, remote agents that are down, or whose tools could
// not be had — by name, with the code of why: the sources whose tools
// Tools leaves out and whose calls are refused with TOOL_UNAVAILABLE. It
// is empty when every source is available.
func (t *Toolset) Unavailable() map[string]diag.Code {
	out := map[string]diag.Code{}
	var deps []driver.Dependency
	for _, src := range t.sources {
		if !src.unavailable() {
			continue
		}
		if deps == nil {
			deps = t.rt.Health().Dependencies
		}
		code := diag.ToolUnavailable
		if i := slices.IndexFunc(deps, func(d driver.Dependency) bool { return d.Kind == src.kind() && d.Name == src.name() }); i >= 0 && deps[i].Code != "" {
			code = deps[i].Code
		} else {
			src.mu.Lock()
			if c := diag.CodeOf(src.listErr); c != "" {
				code = c
			}
			src.mu.Unlock()
		}
		out[src.name()] = code
	}
	return out
}

// CallOption configures one call.
type CallOption func(*callConfig)

type callConfig struct {
	opts   driver.CallOptions // what the source is given
	callID string             // the model's id of the call, for its span
	// approver and approverSet are WithApprover's (approve.go).
	approver    Approver
	approverSet bool
	// ev is the call's event as it is decided, for Options.OnCall
	// (observe.go); nil without it.
	ev *CallEvent
}

// noCallOptions is the configuration of a call without options. Sources
// only read it.
var noCallOptions callConfig

// Approver decides a call that policy says needs approval.
type Approver func(ctx context.Context, req ApprovalRequest) (bool, error)

// ApprovalRequest describes a call awaiting approval.
type ApprovalRequest struct {
	Agent  string
	Tool   Tool
	Args   map[string]any
	Caller heddle.Identity
	Reason string
}

// Call runs one tool as the caller carried by ctx (see heddle.WithCaller).
//
// What the model should read comes back as a result with IsError set and
// the code in _meta.code: TOOL_UNKNOWN, TOOL_DENIED, TOOL_APPROVAL_REQUIRED,
// TOOL_ARGS_INVALID, TOOL_RATE_LIMITED (with retry_after_ms and limit in
// _meta, see LimitOf), STATE_UNAVAILABLE (Options.Rates could not count
// the call, under on_error: closed), TOOL_UNAVAILABLE, TRANSPORT_TIMEOUT.
// A tool's own failure is a result with IsError set and no code. The
// supervisor's deadline (policies.tool_timeout_ms) ends the call with a TOOL_TIMEOUT
// error; a caller's own cancellation returns ctx.Err(). A deferred tool is
// called as any other: a model's calls go through a View, which refuses
// those its conversation has not loaded.
func (t *Toolset) Call(ctx context.Context, name string, args map[string]any, opts ...CallOption) (*mcp.CallToolResult, error) {
	cc := &noCallOptions // read-only: most calls have no options
	if len(opts) > 0 {
		cc = &callConfig{}
		for _, o := range opts {
			o(cc)
		}
	}
	var start time.Time
	if t.rt.opts.OnCall != nil {
		start = time.Now()
		cc = observed(cc)
	}
	// The supervisor's deadline. It is not a context of its own: the few
	// steps that can wait (a re-listing, an approval) get one when they
	// must, and the call itself runs under one timer set to whichever of
	// the supervisor's and the transport's deadlines comes first.
	sd := time.Now().Add(t.timeout)
	ctx, span := t.startSpan(ctx, name, args, cc)
	res, err := t.call(ctx, sd, name, args, cc)
	if errors.Is(err, errSupervisor) {
		err = diag.Wrap(diag.ToolTimeout, context.DeadlineExceeded, "agent %s: %s did not finish within tool_timeout_ms (%d ms)", t.agent.Name, name, t.agent.Policies.ToolTimeoutMS)
		res = nil
	}
	t.endSpan(ctx, span, name, res, err)
	if t.rt.opts.OnCall != nil {
		t.observe(ctx, name, args, res, err, time.Since(start), cc.ev)
	}
	return res, err
}

// errSupervisor is call's report that the supervisor's deadline passed.
var errSupervisor = errors.New("the supervisor's deadline passed")

// bounded runs f under the supervisor's deadline sd, reporting its expiry
// as errSupervisor.
func bounded[T any](ctx context.Context, sd time.Time, f func(context.Context) (T, error)) (T, error) {
	bctx, cancel := context.WithDeadline(ctx, sd)
	defer cancel()
	v, err := f(bctx)
	if err != nil && ctx.Err() == nil && bctx.Err() != nil {
		return v, errSupervisor
	}
	return v, err
}

// mayList reports whether the next index() may have to list a source: the
// index was never built, or since it was, a server announced list_changed,
// reconnected or re-listed to new tools.
func (t *Toolset) mayList() bool {
	cur := t.idx.Load()
	return cur == nil || cur.rtGen.Load() != t.rt.toolsGen.Load()
}

// call is one call's steps: resolve the name, authorize the call (policy,
// approval, the arguments' schema), admit it (the source's and the
// agent's limits), send it. A step that refuses the call returns the
// refusal the model reads.
func (t *Toolset) call(ctx context.Context, sd time.Time, name string, args map[string]any, cc *callConfig) (*mcp.CallToolResult, error) {
	e, refused, err := t.resolve(ctx, sd, name)
	if refused != nil || err != nil {
		return refused, err
	}
	caller := heddle.Caller(ctx)
	if refused, err := t.authorize(ctx, sd, e, args, caller, cc); refused != nil || err != nil {
		return refused, err
	}
	// Limits count only calls that would be sent (runtime/limits.go).
	adm, limited, err := t.admit(ctx, sd, e, caller)
	if limited != nil || err != nil {
		return limited, err
	}
	defer adm.end()
	return t.send(ctx, sd, e, args, cc)
}

// resolve finds the entry a name stands for, listing the sources first
// when something changed; a source that is down is re-checked before a
// name only it could resolve is refused.
func (t *Toolset) resolve(ctx context.Context, sd time.Time, name string) (*entry, *mcp.CallToolResult, error) {
	var bi *builtIndex
	var err error
	if t.mayList() {
		bi, err = bounded(ctx, sd, t.index)
	} else {
		bi, err = t.index(ctx)
	}
	if err != nil {
		return nil, nil, err
	}
	i, ok := bi.names.lookup(name)
	if !ok {
		src := t.downSourceFor(name)
		if src == nil {
			return nil, unknownTool(name), nil
		}
		// Its tools may be unknown until it is back: a re-check may bring
		// it back now, and its tools with it.
		if !src.recheckUp(ctx) {
			return nil, refusal(diag.ToolUnavailable, "the server of tool %s is unavailable; try again later", diag.Clip(name)), nil
		}
		if bi, err = bounded(ctx, sd, t.index); err != nil {
			return nil, nil, err
		}
		if i, ok = bi.names.lookup(name); !ok {
			return nil, unknownTool(name), nil
		}
	}
	return bi.entries[i], nil, nil
}

// unknownTool is the refusal of a name the caller has no tool by.
func unknownTool(name string) *mcp.CallToolResult {
	return refusal(diag.ToolUnknown, "there is no tool %s; use one of the tools listed", diag.Quote(name))
}

// authorize decides the call by policy — deny, allow, or ask the approver
// within the supervisor's deadline — and checks the arguments against the
// tool's input schema.
func (t *Toolset) authorize(ctx context.Context, sd time.Time, e *entry, args map[string]any, caller heddle.Identity, cc *callConfig) (*mcp.CallToolResult, error) {
	pt := e.policyTool()
	d := t.policy.Decide(ctx, policy.Input{Tool: pt, Caller: caller, Args: args})
	cc.decided(d)
	switch d.Effect {
	case policy.Deny:
		if d.Cause != nil {
			t.rt.log.DebugContext(ctx, "policy evaluation failed", "agent", t.agent.Name, "tool", e.tool.Name, "reason", d.Cause.Error())
		}
		if _, known := heddle.LookupCaller(ctx); known && !t.policy.Listed(ctx, pt, caller) {
			// Not listed to this caller: as if it did not exist, so that
			// calls cannot tell what others may use.
			return unknownTool(e.tool.Name), nil
		}
		return refusal(diag.ToolDenied, "%s", d.Reason), nil
	case policy.Ask:
		approved := false
		if approve := t.approver(cc); approve != nil {
			ok, err := bounded(ctx, sd, func(actx context.Context) (bool, error) {
				return approve(actx, ApprovalRequest{Agent: t.agent.Name, Tool: e.tool, Args: args, Caller: caller, Reason: d.Reason})
			})
			if err != nil {
				return nil, err
			}
			approved = ok
			cc.answered(ok)
		}
		if !approved {
			return refusal(diag.ToolApprovalRequired, "%s; the call was not approved", d.Reason), nil
		}
	}
	if msg := validateArgs(e.def, args); msg != "" {
		return refusal(diag.ToolArgsInvalid, "the arguments do not match the tool's input schema: %s", msg), nil
	}
	return nil, nil
}

// send sends an admitted call to its source under one timer, whichever of
// the transport's and the supervisor's deadlines comes first (for use
// cases, always the supervisor's), caps its result, and turns the
// source's failure into the refusal the model reads.
func (t *Toolset) send(ctx context.Context, sd time.Time, e *entry, args map[string]any, cc *callConfig) (*mcp.CallToolResult, error) {
	deadline, transportFirst := sd, false
	if tt := e.src.transportTimeout(); tt > 0 && time.Now().Add(tt).Before(sd) {
		td := time.Now().Add(tt)
		deadline, transportFirst = td, true
	}
	scope := calldeadline.New(ctx, deadline)
	res, err := e.src.call(scope.Context(), e.def, args, cc)
	scope.End()
	switch {
	case err == nil:
		return resultcap.Cap(res, e.src.maxResultBytes()), nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case calldeadline.Expired(scope.Context()) && transportFirst:
		return refusal(diag.TransportTimeout, "%s did not answer within its timeout_ms (%d ms); you may retry", e.tool.Name, e.src.transportTimeout().Milliseconds()), nil
	case calldeadline.Expired(scope.Context()):
		return nil, errSupervisor
	}
	if rl := (*driver.RateLimitedError)(nil); errors.As(err, &rl) {
		return rateLimited(rl), nil
	}
	if code := diag.CodeOf(err); code != "" {
		return refusal(code, "%s", safeMessage(err)), nil
	}
	// A source's error that carries no code is still a refusal the model
	// reads, never an error without one.
	t.rt.log.DebugContext(ctx, "call failed without a code", "agent", t.agent.Name, "tool", e.tool.Name, "reason", err.Error())
	return refusal(diag.ToolUnavailable, "%s failed at its source; try again later", e.tool.Name), nil
}

// downSourceFor finds a source that is down and whose prefix a qualified or
// dotted name carries: its tools may be unknown until it reconnects.
func (t *Toolset) downSourceFor(name string) *kindSource {
	prefix, _, ok := toolname.Split(name)
	if !ok {
		return nil
	}
	for _, src := range t.sources {
		if (src.prefix() == prefix || src.name() == prefix) && src.down() {
			return src
		}
	}
	return nil
}

// safeMessage is a coded error's message without its cause.
func safeMessage(err error) string {
	var e *diag.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "the call failed"
}

// refusal builds a result the model reads: IsError, the code in _meta.code.
func refusal(code diag.Code, format string, args ...any) *mcp.CallToolResult {
	msg := fmt.Sprintf(format, args...)
	return &mcp.CallToolResult{
		Meta:    mcp.Meta{"code": string(code)},
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: string(code) + ": " + msg}},
	}
}

// RefusalCode returns the code of a refusal result, or "" for any other.
func RefusalCode(res *mcp.CallToolResult) diag.Code {
	if res == nil || res.Meta == nil {
		return ""
	}
	c, _ := res.Meta["code"].(string)
	return diag.Code(c)
}

// validateArgs checks arguments against the tool's input schema, compiled
// on the tool's first call. It returns "" when they conform or the schema
// cannot be used.
func validateArgs(d *toolDef, args map[string]any) string {
	d.argsOnce.Do(func() { d.args = argcheck.Compile(d.tool.InputSchema) })
	return d.args.Check(args)
}
