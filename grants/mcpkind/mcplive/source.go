package mcplive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind/internal/msglimit"
	"github.com/heddlehq/heddle/internal/resultcap"
	"github.com/heddlehq/heddle/runtime/driver"
)

// grantFilter is one grant's filter over a server's tools.
type grantFilter struct {
	include, exclude []string
}

// source is the driver.Source of an agent's (or application code's) grants
// of one shared server: its tools, through the grants' filters. Several
// grants of one server in one agent are one source whose filters are
// united.
type source struct {
	srv  *server
	inst *instance // the instance of the runtime whose toolset it serves: its lock

	mu      sync.Mutex
	filters []grantFilter
	gen     uint64
	set     bool
	tools   []*mcp.Tool // filtered, pinned, with the operator's overrides
	orig    []*mcp.Tool // the same tools as the server describes them
	by      map[string]driver.ClassifiedBy
}

// Name is the server's name.
func (m *source) Name() string { return m.srv.name }

// Timing is the server's timeout_ms.
func (m *source) Timing() driver.Timing {
	return driver.Timing{Timeout: m.transportTimeout()}
}

// transportTimeout is the server's timeout_ms.
func (m *source) transportTimeout() time.Duration {
	return time.Duration(m.srv.spec.TimeoutMS) * time.Millisecond
}

// MaxResultBytes is the server's max_result_bytes.
func (m *source) MaxResultBytes() int { return m.srv.spec.MaxResultBytes }

// Down reports a server that is not ready: without a session, or whose
// tools could not be listed over it.
func (m *source) Down() bool {
	st := m.srv.status().state
	return st != driver.StateReady && st != driver.StateIdle
}

// Wake has the server's supervisor make an attempt now, without waiting
// for it.
func (m *source) Wake() { m.srv.wake() }

// Recheck has the server's supervisor make an attempt now and waits for it
// (within ctx, at most driver.RecheckWait); it reports whether the server
// is ready.
func (m *source) Recheck(ctx context.Context) bool { return m.srv.recheck(ctx) }

func (m *source) addFilter(v grantFilter) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.filters = append(m.filters, v)
	m.set = false
}

func (m *source) allowed(name string) bool {
	for _, v := range m.filters {
		if filter(name, v.include, v.exclude) {
			return true
		}
	}
	return false
}

// Tools returns the filtered tools, with the operator's overrides of their
// annotations, cached per generation of the server's listing; a stale
// server is re-listed first. A pinned tool that no longer matches the lock
// is withheld, and so is one that screen: strict withholds.
func (m *source) Tools(ctx context.Context) ([]*mcp.Tool, uint64, error) {
	tools, _, gen, err := m.list(ctx)
	return tools, gen, err
}

func (m *source) list(ctx context.Context) (tools, orig []*mcp.Tool, gen uint64, err error) {
	// A listing is the server's, whoever asked for the tools: it is never
	// sent as a caller.
	if _, ok := heddle.CallerToken(ctx); ok {
		ctx = heddle.WithCallerToken(ctx, "")
	}
	all, gen, err := m.srv.refresh(ctx, false)
	if err != nil {
		return nil, nil, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.set && m.gen == gen {
		return m.tools, m.orig, gen, nil
	}
	tools, orig = make([]*mcp.Tool, 0, len(all)), make([]*mcp.Tool, 0, len(all))
	by := make(map[string]driver.ClassifiedBy, len(all))
	for _, t := range all {
		if !m.allowed(t.Name) || m.srv.withheld(t) {
			continue
		}
		if !m.inst.env.Pins.Pinned(m.srv.name, t) && m.srv.pinningWarn() {
			m.srv.log.WarnContext(ctx, "tool changed since heddle.lock was written; ai.pinning is warn, so it is offered as the server describes it now", "server", m.srv.name, "tool", t.Name, "code", diag.ToolDefinitionChanged)
		} else if !m.inst.env.Pins.Pinned(m.srv.name, t) {
			m.srv.log.ErrorContext(ctx, "tool changed since heddle.lock was written; it is withheld", "server", m.srv.name, "tool", t.Name, "code", diag.ToolDefinitionChanged)
			continue
		}
		c, class := m.srv.classify(t)
		tools = append(tools, c)
		orig = append(orig, t)
		by[t.Name] = class.By
	}
	m.tools, m.orig, m.by, m.gen, m.set = tools, orig, by, gen, true
	return tools, orig, gen, nil
}

// resendable reports a tool a call may be sent to again after its
// connection broke: read-only or idempotent, by the server's word or the
// operator's.
func resendable(t *mcp.Tool) bool {
	a := t.Annotations
	return a != nil && (a.ReadOnlyHint || a.IdempotentHint)
}

// Call runs one tool over the shared session.
func (m *source) Call(ctx context.Context, t *mcp.Tool, args map[string]any, opts driver.CallOptions) (*mcp.CallToolResult, error) {
	return m.call(ctx, t, args, opts)
}

func matchAny(globs []string, name string) bool {
	return slices.ContainsFunc(globs, func(g string) bool { return globMatch(g, name) })
}

// globMatch matches a tool name against a path.Match pattern.
func globMatch(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}

// filter applies a grant's include (empty: all) then exclude globs.
func filter(name string, include, exclude []string) bool {
	if len(include) > 0 && !slices.ContainsFunc(include, func(p string) bool { return globMatch(p, name) }) {
		return false
	}
	return !slices.ContainsFunc(exclude, func(p string) bool { return globMatch(p, name) })
}

// progress routes the server's progress notifications to the calls that
// asked for them, by token.
func (s *server) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p := req.Params
	if p == nil {
		return
	}
	tok, _ := p.ProgressToken.(string)
	if f, ok := s.progressFuncs.Load(tok); ok {
		f.(func(driver.Progress))(driver.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
	}
}

// progressSeq numbers progress tokens, unique in the process.
var progressSeq atomic.Uint64

// onProgress sends the progress notifications of token tok to f until
// unregister is called.
func (s *server) onProgress(tok string, f func(driver.Progress)) (unregister func()) {
	s.progressFuncs.Store(tok, f)
	return func() { s.progressFuncs.Delete(tok) }
}

func newProgressToken() string { return "heddle-" + strconv.FormatUint(progressSeq.Add(1), 10) }

// call sends one tools/call over the shared session, and when the server
// asks for input (input_required), answers it and sends the call again
// with the answers, at most maxInputRounds times; a call given
// opts.Input hands the server's request for input to its caller instead.
// A server that is not ready is re-checked first (session). A request whose connection failed —
// refused, reset, ended, a 502 or 503 — makes the server down at once; one
// that cannot have reached the server is sent once more if the re-check
// brings the server back, and so is any request to a tool marked read-only
// or idempotent (the operator's read_only_tools/idempotent_tools override
// the server's hints); any other request whose connection broke is
// reported, not repeated.
func (m *source) call(ctx context.Context, t *mcp.Tool, args map[string]any, opts driver.CallOptions) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: t.Name, Arguments: args}
	if args == nil {
		params.Arguments = map[string]any{}
	}
	if opts.Progress != nil {
		tok := newProgressToken()
		params.SetProgressToken(tok)
		unregister := m.srv.onProgress(tok, opts.Progress)
		defer unregister()
	}
	if in := opts.Input; in != nil {
		if in.Capabilities != nil {
			if params.Meta == nil {
				params.Meta = mcp.Meta{}
			}
			params.Meta[mcp.MetaKeyClientCapabilities] = in.Capabilities
		}
		params.RequestState, params.InputResponses = in.State, in.Responses
	}
	if !m.srv.hold() {
		return nil, diag.New(diag.ToolUnavailable, "server %s is closed", m.srv.name)
	}
	defer m.srv.release()
	if err := m.srv.asCaller(ctx, t.Name); err != nil {
		return nil, err
	}
	for round := 1; ; round++ {
		res, err := m.send(ctx, t, params)
		if err != nil || !res.NeedsInput() || opts.Input != nil {
			return res, err
		}
		if round >= maxInputRounds {
			return nil, diag.New(diag.MCPInputUnanswered, "server %s asked for input %d times during a call of %s; heddle answers at most %d rounds", m.srv.name, round, t.Name, maxInputRounds)
		}
		answers, err := m.srv.inst.answer(ctx, m.srv.name, res.InputRequests)
		if err != nil {
			return nil, err
		}
		next := *params
		next.InputResponses, next.RequestState = answers, res.RequestState
		params = &next
	}
}

// asCaller checks, for a server called as the caller of each call (a
// strategy that is an authlive.CallerStrategy: oauth's flow
// token_exchange), that this call can be made as its caller, before
// anything is sent: a call whose context carries no caller's token is
// refused with CALLER_TOKEN_REQUIRED, and never sent as heddle instead;
// one whose token the identity provider will not exchange, with the
// strategy's code. Other servers' calls pass.
func (s *server) asCaller(ctx context.Context, tool string) error {
	cs, ok := s.strat.(authlive.CallerStrategy)
	if !ok {
		return nil
	}
	err := cs.ForCaller(ctx)
	if errors.Is(err, authlive.ErrNoCallerToken) {
		return diag.Wrap(diag.CallerTokenRequired, err, "server %s is called as the caller of each call, and heddle holds no token of this call's caller: %s was not called", s.name, tool)
	}
	return err
}

// maxInputRounds bounds the rounds of input one call's server may ask for
// (MCP 2026-07-28's input_required results) before the call is refused.
const maxInputRounds = 10

// send sends one tools/call over the shared session. A server that is not
// ready is re-checked first (session); see call for what is resent.
func (m *source) send(ctx context.Context, t *mcp.Tool, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			event(ctx, "heddle.retry", attribute.Int("heddle.attempt", attempt+1))
		}
		sess, err := m.srv.session(ctx)
		if err != nil {
			return nil, err
		}
		res, err := m.srv.callTool(ctx, sess, params)
		if err == nil {
			return res, nil
		}
		if limit, ok := msglimit.Refused(err); ok && ctx.Err() == nil {
			return nil, m.tooLarge(t, limit) // the session is fine: nothing to retry
		}
		status := m.srv.goneStatus(sess)
		switch classify(ctx, err, status) {
		case failCtx:
			return nil, ctx.Err()
		case failProtocol:
			if rpcErr := (*jsonrpc.Error)(nil); errors.As(err, &rpcErr) && rpcErr.Code == mcp.CodeMissingRequiredClientCapabilities {
				return capabilityRequired(m.srv.name, t.Name, rpcErr), nil
			}
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		case failUnreachable: // not sent: the server is down until a reconnect succeeds
			m.srv.broken(sess, err)
			if attempt == 0 && m.srv.recheck(ctx) {
				continue
			}
			reason, _ := netReason(err, m.srv.host())
			return nil, diag.Wrap(diag.ToolUnavailable, err, "server %s cannot be reached: %s; reconnecting", m.srv.name, reason)
		case failTransient:
			m.srv.log.DebugContext(ctx, "call rejected by transport", "server", m.srv.name, "reason", err.Error())
			if reason, _ := netReason(err, m.srv.host()); reason != "" {
				return nil, diag.Wrap(diag.ToolUnavailable, err, "the request to server %s failed: %s; try again later", m.srv.name, reason)
			}
			return nil, diag.Wrap(diag.ToolUnavailable, err, "server %s answered with a transient error; try again later", m.srv.name)
		case failNotSent:
			m.srv.broken(sess, err)
			if attempt == 0 && m.srv.recheck(ctx) {
				continue
			}
			return nil, diag.Wrap(diag.ToolUnavailable, err, "server %s is unavailable; reconnecting", m.srv.name)
		case failGone: // whatever answered for the server could not reach it: the tool may have run
			m.srv.broken(sess, err)
			if attempt == 0 && resendable(t) && m.srv.recheck(ctx) {
				continue
			}
			return nil, diag.Wrap(diag.ToolUnavailable, err, "server %s answered HTTP %d %s, so the call may or may not have run; reconnecting", m.srv.name, status, http.StatusText(status))
		default: // the connection broke mid-call: the tool may have run
			m.srv.broken(sess, err)
			if attempt == 0 && resendable(t) && m.srv.recheck(ctx) {
				continue
			}
			return nil, diag.Wrap(diag.ToolUnavailable, err, "the connection to server %s broke during the call, which may or may not have run; reconnecting", m.srv.name)
		}
	}
}

// capabilityRequired is the refusal of a call a server refused for a
// client capability its caller did not declare (-32021): the code
// MCP_CAPABILITY_REQUIRED, and in _meta.requiredCapabilities what the
// server said it needs, for a front door that passes the refusal on (the
// MCP facade answers its host -32021 with them).
func capabilityRequired(server, tool string, rpcErr *jsonrpc.Error) *mcp.CallToolResult {
	var data struct {
		Required map[string]any `json:"requiredCapabilities"`
	}
	_ = json.Unmarshal(rpcErr.Data, &data)
	meta := mcp.Meta{"code": string(diag.MCPCapabilityRequired)}
	if data.Required != nil {
		meta["requiredCapabilities"] = data.Required
	}
	text := fmt.Sprintf("%s: server %s needs a client capability to run %s that its caller did not declare: %s", diag.MCPCapabilityRequired, server, tool, diag.Clip(rpcErr.Message))
	return &mcp.CallToolResult{Meta: meta, IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// tooLarge is the error of a call whose answer was over the server's hard
// limit, and was refused by the transport as it was read.
func (m *source) tooLarge(t *mcp.Tool, limit int) error {
	return diag.New(diag.ResultTooLarge,
		"the result of %s from server %s was larger than its hard limit of %d bytes (%d × max_result_bytes, at least %d MiB) and was not read; ask the tool for less",
		t.Name, m.srv.name, limit, resultcap.HardLimitFactor, resultcap.MinHardLimit>>20)
}

var (
	_ driver.Source         = (*source)(nil)
	_ driver.TimedSource    = (*source)(nil)
	_ driver.CappedSource   = (*source)(nil)
	_ driver.FallibleSource = (*source)(nil)
)
