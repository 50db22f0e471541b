package mcpfacade

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
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
}

// handshakeVersions are the protocol versions a session negotiates: those
// of the initialize handshake. A session of the 2026-07-28 protocol has no
// server-initiated requests on the session, so it could not ask its host to
// approve a call by elicitation.
var handshakeVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// loadTools is the call after which a deferred toolset's tools change: the
// session re-lists them then.
const loadTools = "load_tools"

// session is one host's connection: its own server, whose tools mirror
// its toolset's.
type session struct {
	ts   Toolset
	opts Options
	log  *slog.Logger
	srv  *mcp.Server

	// syncMu serialises sync; offered is the hash of each tool's definition
	// on srv, by name.
	syncMu  sync.Mutex
	offered map[string][32]byte
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
}

// newSession builds a session's server with the toolset's tools on it. The
// error is the listing's: the context's, or TOOL_NAME_CONFLICT.
func newSession(ctx context.Context, ts Toolset, opts *Options, sessionID func() string) (*session, error) {
	s := &session{ts: ts, offered: map[string][32]byte{}, started: make(chan struct{}), done: make(chan struct{})}
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
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "heddle/" + s.opts.Agent, Title: "heddle: the tools of agent " + s.opts.Agent, Version: s.opts.Version},
		&mcp.ServerOptions{
			Logger:                    s.log,
			Capabilities:              &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
			InitializedHandler:        func(_ context.Context, req *mcp.InitializedRequest) { s.start(req.Session) },
			SupportedProtocolVersions: handshakeVersions,
			GetSessionID:              sessionID,
		})
	s.srv.AddReceivingMiddleware(s.middleware)
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
				return s.handler(r.Params.Name)(ctx, r)
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
			s.follow(ctx)
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

// follow re-lists the toolset on every upstream change until ctx ends.
// Changes that arrive together are one re-listing.
func (s *session) follow(ctx context.Context) {
	if s.opts.Watch == nil {
		return
	}
	ch := s.opts.Watch(ctx)
	for range ch {
		for drained := false; !drained; {
			select {
			case _, ok := <-ch:
				if !ok {
					return
				}
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
	tools, err := s.ts.Tools(ctx)
	if err != nil {
		return err
	}
	want := make(map[string]*mcp.Tool, len(tools))
	for _, t := range tools {
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
// host as its approver.
func (s *session) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &args); err != nil || args == nil {
				return refusal(diag.ToolArgsInvalid, "the arguments must be a JSON object"), nil
			}
		}
		ctx = heddle.WithCaller(ctx, s.opts.Caller)
		opts := []runtime.CallOption{runtime.WithApprover(s.approver(req.Session))}
		var progressed func()
		if tok := req.Params.GetProgressToken(); tok != nil {
			var p runtime.CallOption
			p, progressed = forwardProgress(ctx, req.Session, tok)
			opts = append(opts, p)
		}
		res, err := s.ts.Call(ctx, name, args, opts...)
		if progressed != nil {
			progressed()
		}
		if err != nil {
			return errorResult(err), nil
		}
		if name == loadTools {
			if err := s.sync(ctx); err != nil {
				s.log.Warn("the agent's tools could not be listed after load_tools", "agent", s.opts.Agent, "code", diag.CodeOf(err))
			}
		}
		return res, nil
	}
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
