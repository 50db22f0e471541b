package mcpfacade

//lint:file-ignore SA1019 roots and sampling are deprecated from protocol 2026-07-28 on, but servers and hosts still ask for and give them: a server's requests for input pass through.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// Toolset is what one session serves: an agent's tools and calls to them.
// *runtime.Toolset is one; a per-conversation view of it is another.
type Toolset interface {
	Tools(ctx context.Context) ([]runtime.Tool, error)
	Call(ctx context.Context, name string, args map[string]any, opts ...runtime.CallOption) (*mcp.CallToolResult, error)
}

// Options configure a session. The zero value of each field has the
// default its comment gives.
type Options struct {
	// Agent is the agent served; it names the server to the host
	// (heddle/<agent>).
	Agent string
	// Caller is who every call of the session is made for. Over HTTP,
	// NewHandler sets it from the request that opens the session.
	Caller heddle.Identity
	// Watch subscribes to changes of upstream tools (runtime.Runtime.Watch):
	// each change re-lists the toolset, and the host is sent
	// notifications/tools/list_changed when its tools changed. Default: nil,
	// the tools are re-listed only when the host lists them.
	Watch func(ctx context.Context) <-chan runtime.Event
	// Version is the server's version in the handshake. Default: "dev".
	Version string
	// Logger receives the session's records; never stdout. Default:
	// discarded.
	Logger *slog.Logger
	// Sealer seals the requestState of the input_required results a host of
	// 2026-07-28 is answered (approval, an upstream server's input).
	// Default: a Sealer with a key of its own (RandomSealer), whose states
	// open in this process only.
	Sealer *Sealer
	// Loaded, when set, is called after a load_tools call changed what the
	// session offers.
	Loaded func()
}

// ListTTL is the ttlMs of the facade's tools/list results at 2026-07-28:
// how long a host may reuse a list before it lists again. The list is the
// caller's own (cacheScope private): policies decide what each may call.
// A host that listens (subscriptions/listen) hears of a change at once.
const ListTTL = 60_000

// handshakeVersions are the protocol versions of the initialize handshake,
// which a session negotiates.
var handshakeVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// loadTools is the call after which a deferred toolset's tools change: the
// session re-lists them then.
const loadTools = "load_tools"

// session is one host's connection: its own server, whose tools mirror
// its toolset's.
type session struct {
	ts     Toolset
	opts   Options
	log    *slog.Logger
	srv    *mcp.Server
	sealer *Sealer

	// syncMu serialises sync; offered is the hash of each tool's definition
	// on srv, by name; scope is which tools srv holds (nil: all).
	syncMu  sync.Mutex
	offered map[string][32]byte
	scope   scope
	// names are offered's names as the last sync left them, read by every
	// tools/call without waiting for a sync in progress.
	names atomic.Pointer[map[string]bool]

	// started is set once the host is initialized: follow then runs until
	// the session ends, and done closes after it.
	startOnce sync.Once
	started   chan struct{}
	done      chan struct{}
	// ended is called once the session has ended (HTTP: forget its id).
	ended func()

	// token is the caller's own token as the session's latest request
	// presented it (over HTTP, serve.auth kind jwt): its calls carry it,
	// not the one that opened the session, which may have expired since.
	token atomic.Pointer[string]
}

// presented records the caller's token a request of the session carries.
func (s *session) presented(ctx context.Context) {
	if tok, ok := heddle.CallerToken(ctx); ok {
		s.token.Store(&tok)
	}
}

// A scope says which of the toolset's tools a session's server holds
// before its host lists them: nil is all of them. A server made for one
// request of 2026-07-28 holds the tool it calls, or none (its tools/list
// lists them all then): building a tool costs more than most calls.
type scope func(name string) bool

// noTools is the scope of a request that calls and lists no tool.
func noTools(string) bool { return false }

// newSession builds a session's server with the toolset's tools of scope on
// it. The error is the listing's: the context's, or TOOL_NAME_CONFLICT.
func newSession(ctx context.Context, ts Toolset, opts *Options, sessionID func() string, sc scope) (*session, error) {
	s := &session{ts: ts, offered: map[string][32]byte{}, started: make(chan struct{}), done: make(chan struct{}), scope: sc}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Version == "" {
		s.opts.Version = "dev"
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.sealer = s.opts.Sealer
	if s.sealer == nil {
		s.sealer = RandomSealer(0)
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "heddle/" + s.opts.Agent, Title: "heddle: the tools of agent " + s.opts.Agent, Version: s.opts.Version},
		&mcp.ServerOptions{
			Logger:                    s.log,
			Capabilities:              &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
			InitializedHandler:        func(_ context.Context, req *mcp.InitializedRequest) { s.start(req.Session) },
			SupportedProtocolVersions: protocolVersions,
			GetSessionID:              sessionID,
			SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
				c.TTLMs, c.CacheScope = ListTTL, "private"
			},
		})
	s.srv.AddReceivingMiddleware(s.middleware, refuseNotServed)
	if err := s.sync(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// middleware re-lists the toolset before the host's tools/list is
// answered, so that a listing is as fresh as the toolset's own (tools of a
// server that went down leave it).
func (s *session) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			s.syncMu.Lock()
			s.scope = nil // a host that lists sees every tool
			s.syncMu.Unlock()
			if err := s.sync(ctx); err != nil {
				s.log.Warn("the agent's tools could not be listed; the host is given the last list", "agent", s.opts.Agent, "code", diag.CodeOf(err))
			}
		case "tools/call":
			// A name the host was not offered — a qualified or dotted
			// name, as the invoke API accepts, a tool of a server that is
			// down, or no tool at all — goes to the toolset, which calls
			// it or refuses it with a code, rather than to go-sdk, which
			// would answer a JSON-RPC error without one.
			if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil && !s.isOffered(r.Params.Name) {
				res, err := s.handler(r.Params.Name)(ctx, r)
				if err == nil && isModern(r) {
					// go-sdk marks the results of the tools it calls.
					res = withResultType(res)
				}
				return res, err
			}
		}
		return next(ctx, method, req)
	}
}

// isOffered reports whether the host was offered a tool of that name.
func (s *session) isOffered(name string) bool {
	names := s.names.Load()
	return names != nil && (*names)[name]
}

// start runs, once the host is initialized, what lasts as long as the
// session: following upstream changes, and noticing the session's end.
func (s *session) start(ss *mcp.ServerSession) {
	s.startOnce.Do(func() {
		close(s.started)
		ctx, cancel := context.WithCancel(context.Background())
		followed := make(chan struct{})
		go func() {
			defer close(followed)
			s.follow(ctx, nil)
		}()
		go func() {
			_ = ss.Wait()
			cancel()
			<-followed
			if s.ended != nil {
				s.ended()
			}
			close(s.done)
		}()
	})
}

// wait returns once what start started has ended; at once if the session
// never started.
func (s *session) wait() {
	select {
	case <-s.started:
		<-s.done
	default:
	}
}

// follow re-lists the toolset on every upstream change, and each time
// loaded says the conversation loaded tools, until ctx ends. Changes that
// arrive together are one re-listing.
func (s *session) follow(ctx context.Context, loaded <-chan struct{}) {
	var ch <-chan runtime.Event
	if s.opts.Watch != nil {
		ch = s.opts.Watch(ctx)
	}
	if ch == nil && loaded == nil {
		return
	}
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-loaded:
		case <-ctx.Done():
			return
		}
		for drained := false; !drained; {
			select {
			case _, ok := <-ch:
				if !ok {
					return
				}
			case <-loaded:
			default:
				drained = true
			}
		}
		if err := s.sync(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("the agent's tools could not be listed after a change", "agent", s.opts.Agent, "code", diag.CodeOf(err))
		}
	}
}

// sync makes the server's tools the toolset's: tools that are gone are
// removed, new and changed ones added. go-sdk then sends the session
// notifications/tools/list_changed (debounced) when anything changed.
func (s *session) sync(ctx context.Context) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	// The session's caller is listed what it may use (Toolset.Tools).
	tools, err := s.ts.Tools(heddle.WithCaller(ctx, s.opts.Caller))
	if err != nil {
		return err
	}
	want := make(map[string]*mcp.Tool, len(tools))
	for _, t := range tools {
		if s.scope != nil && !s.scope(t.Name) {
			continue
		}
		want[t.Name] = mcpTool(t)
	}
	var gone []string
	for name := range s.offered {
		if want[name] == nil {
			gone = append(gone, name)
			delete(s.offered, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
	}
	for name, mt := range want {
		h := toolHash(mt)
		if old, ok := s.offered[name]; ok && old == h {
			continue
		}
		if err := addTool(s.srv, mt, s.handler(name)); err != nil {
			s.log.Warn("a tool cannot be offered over MCP", "agent", s.opts.Agent, "tool", name, "reason", err.Error())
			continue
		}
		s.offered[name] = h
	}
	names := make(map[string]bool, len(s.offered))
	for name := range s.offered {
		names[name] = true
	}
	s.names.Store(&names)
	return nil
}

// handler calls one tool of the toolset, as the session's caller, with the
// host as its approver: in the session at 2025-11-25 and before
// (callSession), by an input_required result at 2026-07-28 (callModern).
func (s *session) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &args); err != nil || args == nil {
				return refusal(diag.ToolArgsInvalid, "the arguments must be a JSON object"), nil
			}
		}
		ctx = heddle.WithCaller(ctx, s.opts.Caller)
		if tok := s.token.Load(); tok != nil {
			ctx = heddle.WithCallerToken(ctx, *tok)
		}
		var opts []runtime.CallOption
		if tok := req.Params.GetProgressToken(); tok != nil {
			p, progressed := forwardProgress(ctx, req.Session, tok)
			defer progressed()
			opts = append(opts, p)
		}
		var res *mcp.CallToolResult
		var err error
		if isModern(req) {
			res, err = s.callModern(ctx, req, name, args, opts)
		} else {
			res, err = s.callSession(ctx, req, name, args, opts)
		}
		if err == nil && name == loadTools && !res.IsError && res.InputRequests == nil {
			if err := s.sync(ctx); err != nil {
				s.log.Warn("the agent's tools could not be listed after load_tools", "agent", s.opts.Agent, "code", diag.CodeOf(err))
			}
			if s.opts.Loaded != nil {
				s.opts.Loaded()
			}
		}
		return res, err
	}
}

// callSession calls a tool for a host of a session (2025-11-25 and
// before): approval is asked by elicitation in the session, once per
// call, and an upstream server's requests for input during the call
// (input_required) are asked of the host in the session too, and the call
// resumed with its answers, at most maxInputRounds times.
func (s *session) callSession(ctx context.Context, req *mcp.CallToolRequest, name string, args map[string]any, opts []runtime.CallOption) (*mcp.CallToolResult, error) {
	approve, approved := s.approver(req.Session), false
	opts = append(opts, runtime.WithApprover(func(ctx context.Context, ar runtime.ApprovalRequest) (bool, error) {
		if approved { // in an earlier round of this call
			return true, nil
		}
		ok, err := approve(ctx, ar)
		approved = ok
		return ok, err
	}))
	caps := req.Session.InitializeParams()
	in := &driver.Input{Capabilities: wireCapabilities(capabilitiesOf(caps))}
	for round := 1; ; round++ {
		res, err := s.ts.Call(ctx, name, args, append(opts, runtime.WithInput(in))...)
		if err != nil {
			return errorResult(err), nil
		}
		if res.InputRequests == nil {
			return ownResult(res), nil
		}
		if round >= maxInputRounds {
			return refusal(diag.MCPInputUnanswered, "the server of %s asked for input %d times during the call; the facade passes at most %d rounds", name, round, maxInputRounds), nil
		}
		answers, refused := s.askHost(ctx, req.Session, capabilitiesOf(caps), res.InputRequests)
		if refused != nil {
			return refused, nil
		}
		in = &driver.Input{Capabilities: in.Capabilities, State: res.RequestState, Responses: answers}
	}
}

// maxInputRounds bounds the rounds of an upstream server's requests for
// input the facade passes to a host of a session during one call.
const maxInputRounds = 10

// askHost asks a host of a session for the input an upstream server asked
// for: what it declared it can give; an elicitation it cannot answer is
// declined, roots it does not offer are none, and sampling it cannot do
// refuses the call (MCP_INPUT_UNANSWERED).
func (s *session) askHost(ctx context.Context, ss *mcp.ServerSession, caps *mcp.ClientCapabilities, reqs mcp.InputRequestMap) (mcp.InputResponseMap, *mcp.CallToolResult) {
	out := make(mcp.InputResponseMap, len(reqs))
	for id, ir := range reqs {
		var res mcp.InputResponse
		var err error
		switch p := ir.(type) {
		case *mcp.ElicitParams:
			if caps == nil || caps.Elicitation == nil {
				res = &mcp.ElicitResult{Action: "decline"}
				break
			}
			res, err = ss.Elicit(ctx, p)
		case *mcp.CreateMessageParams:
			if caps == nil || caps.Sampling == nil {
				return nil, refusal(diag.MCPInputUnanswered, "the tool's server asked for sampling, which this host did not declare it can do")
			}
			res, err = ss.CreateMessage(ctx, p)
		case *mcp.CreateMessageWithToolsParams:
			if caps == nil || caps.Sampling == nil {
				return nil, refusal(diag.MCPInputUnanswered, "the tool's server asked for sampling, which this host did not declare it can do")
			}
			res, err = ss.CreateMessageWithTools(ctx, p)
		case *mcp.ListRootsParams:
			if caps == nil || (caps.RootsV2 == nil && !caps.Roots.ListChanged) {
				res = &mcp.ListRootsResult{Roots: []*mcp.Root{}}
				break
			}
			res, err = ss.ListRoots(ctx, p)
		default:
			return nil, refusal(diag.MCPInputUnanswered, "the tool's server asked for input of a kind the facade does not know")
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, errorResult(ctx.Err())
			}
			s.log.Warn("the host did not answer a server's request for input", "agent", s.opts.Agent, "reason", err.Error())
			return nil, refusal(diag.MCPInputUnanswered, "the host did not answer the tool's server's request for input")
		}
		out[id] = res
	}
	return out, nil
}

// mcpTool is a toolset's tool as the host sees it. The input schema is
// always an object schema (go-sdk refuses any other, and hosts expect
// one); an output schema that is not one is left out.
func mcpTool(t runtime.Tool) *mcp.Tool {
	destructive := t.Destructive
	mt := &mcp.Tool{
		Name:        t.Name,
		Description: t.Description,
		InputSchema: objectSchema(t.InputSchema, true),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.ReadOnly, DestructiveHint: &destructive, IdempotentHint: t.Idempotent},
	}
	if out := objectSchema(t.OutputSchema, false); out != nil {
		mt.OutputSchema = out
	}
	return mt
}

// objectSchema returns schema as a JSON object with type object: a schema
// with no type is given it; any other is replaced by one accepting any
// object when orAny, or nil.
func objectSchema(schema any, orAny bool) map[string]any {
	var m map[string]any
	if schema != nil {
		if b, err := json.Marshal(schema); err == nil {
			_ = json.Unmarshal(b, &m)
		}
	}
	if m != nil {
		switch typ, ok := m["type"]; {
		case !ok:
			m["type"] = "object"
			return m
		case typ == "object":
			return m
		}
	}
	if !orAny {
		return nil
	}
	return map[string]any{"type": "object"}
}

// addTool adds t to srv, reporting rather than panicking on a definition
// go-sdk refuses: the definition came from an upstream server.
func addTool(srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	srv.AddTool(t, h)
	return nil
}

func toolHash(t *mcp.Tool) [32]byte {
	b, _ := json.Marshal(t)
	return sha256.Sum256(b)
}

// ownResult is a call's result as the facade answers it: an upstream
// server's own identity (_meta's serverInfo) is not passed on, the facade
// names itself. res is not changed.
func ownResult(res *mcp.CallToolResult) *mcp.CallToolResult {
	if _, ok := res.Meta[mcp.MetaKeyServerInfo]; !ok {
		return res
	}
	out := *res
	out.Meta = maps.Clone(res.Meta)
	delete(out.Meta, mcp.MetaKeyServerInfo)
	return &out
}

// errorResult is a call's coded error (TOOL_TIMEOUT, SHUTTING_DOWN, a
// caller that went away) as the refusal the host's model reads. An error
// without a code is never passed on: its text could say more than a
// refusal may.
func errorResult(err error) *mcp.CallToolResult {
	code := diag.CodeOf(err)
	if code == "" {
		return refusal(diag.ToolUnavailable, "the call failed inside heddle; its log says why")
	}
	return refusal(code, "%s", err.Error())
}

// refusal is a result the model reads, in the runtime's shape: IsError,
// the text starting with the code, and the code in _meta.code.
func refusal(code diag.Code, format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Meta:    mcp.Meta{"code": string(code)},
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: string(code) + ": " + fmt.Sprintf(format, args...)}},
	}
}

var _ Toolset = (*runtime.Toolset)(nil)
