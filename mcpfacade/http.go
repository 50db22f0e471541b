package mcpfacade

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
)

// HandlerOptions configure a Handler. The zero value of each field has the
// default its comment gives.
type HandlerOptions struct {
	// Toolset returns the toolset a new session of agent serves; it is
	// called once per session. Its error (AGENT_UNKNOWN, say) is answered
	// with its code. Required.
	Toolset func(agent string) (Toolset, error)
	// Agent returns the agent a request is for (its path's {agent}).
	// Required.
	Agent func(r *http.Request) string
	// Session is what each session's Options start from; Agent and Caller
	// are set per session.
	Session Options
	// SessionTimeout ends a session no request has reached for this long.
	// Default: 30 minutes.
	SessionTimeout time.Duration
	// MaxBodyBytes bounds a request's body. Default: 1 MiB.
	MaxBodyBytes int64
	// Conversation returns the toolset a request of 2026-07-28 serves (it
	// has no session), and the key of the conversation it belongs to: the
	// requests of one conversation share what load_tools loaded, and a
	// subscriptions/listen of the conversation hears of it. "" is a
	// conversation of the request alone. Default: Toolset(agent), "".
	Conversation func(r *http.Request, agent string) (Toolset, string, error)
	// Fleet makes sessions of 2025-11-25 movable between the workers of a
	// fleet that share Session.Sealer's key: a session's id is sealed, and
	// a worker given a request of a session it does not hold serves it
	// (fleet.go). Default: a session lives in the worker that began it.
	Fleet bool
	// SessionToolset returns the toolset a session moved to this worker
	// serves (its id names it: what it loaded is kept by id). Default:
	// Toolset(agent).
	SessionToolset func(agent, sessionID string, caller heddle.Identity) (Toolset, error)
}

// DefaultSessionTimeout is HandlerOptions.SessionTimeout's default.
const DefaultSessionTimeout = 30 * time.Minute

// A Handler serves the facade over Streamable HTTP (stateful sessions) for
// any agent. Each initialize request opens a session for the caller on its
// context (heddle.Caller: the front door authenticates before the
// Handler); a later request of that session with another caller is
// refused 403 FORBIDDEN, and one at another agent's path 404 NOT_FOUND.
// The Handler checks neither Host nor Origin: the front door does (serve
// refuses a Host it does not answer to, and a browser's cross-origin
// request). It is safe for concurrent use; Close ends every session.
type Handler struct {
	opts HandlerOptions
	mcp  *mcp.StreamableHTTPHandler
	// modern serves requests of 2026-07-28: no sessions, a server per
	// request.
	modern *mcp.StreamableHTTPHandler
	// ctx ends with Close: it ends the subscriptions/listen requests.
	ctx  context.Context
	stop context.CancelFunc
	// template answers what go-sdk asks of a server for a request that
	// opens no session (its protocol versions).
	template *mcp.Server

	mu       sync.Mutex
	sessions map[string]*httpSession
	closed   bool
	// listeners are the subscriptions/listen requests of each conversation
	// key, told when a call of the conversation loaded tools.
	listeners map[string]map[chan struct{}]bool
	// movedSessions are the sessions begun at other workers of the fleet
	// that this one serves (fleet.go).
	movedSessions map[string]*movedSession
}

type httpSession struct {
	*session
	agent string
	ss    *mcp.ServerSession
}

type serverKey struct{}

// NewHandler returns a Handler.
func NewHandler(opts *HandlerOptions) *Handler {
	h := &Handler{opts: *opts, sessions: map[string]*httpSession{}, listeners: map[string]map[chan struct{}]bool{}, movedSessions: map[string]*movedSession{}}
	h.ctx, h.stop = context.WithCancel(context.Background())
	if h.opts.Session.Sealer == nil {
		h.opts.Session.Sealer = RandomSealer(0)
	}
	if h.opts.SessionToolset == nil {
		h.opts.SessionToolset = func(agent, _ string, _ heddle.Identity) (Toolset, error) { return h.opts.Toolset(agent) }
	}
	if h.opts.Conversation == nil {
		h.opts.Conversation = func(_ *http.Request, agent string) (Toolset, string, error) {
			ts, err := h.opts.Toolset(agent)
			return ts, "", err
		}
	}
	if h.opts.SessionTimeout <= 0 {
		h.opts.SessionTimeout = DefaultSessionTimeout
	}
	if h.opts.MaxBodyBytes <= 0 {
		h.opts.MaxBodyBytes = 1 << 20
	}
	h.template = mcp.NewServer(&mcp.Implementation{Name: "heddle"}, &mcp.ServerOptions{SupportedProtocolVersions: handshakeVersions})
	h.mcp = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if srv, ok := r.Context().Value(serverKey{}).(*mcp.Server); ok {
			return srv
		}
		return h.template
	}, &mcp.StreamableHTTPOptions{
		SessionTimeout: h.opts.SessionTimeout,
		Logger:         h.opts.Session.Logger,
		// The front door checks the Host against the addresses and names
		// it answers to (serve.hosts), which go-sdk's check, localhost
		// only, would contradict behind a proxy on loopback.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        h.opts.MaxBodyBytes,
		// A host whose stream breaks resumes it (Last-Event-ID) without
		// losing the answer of a call: the events of each session are kept
		// in memory, 10 MiB at most over every session, and dropped when
		// the session ends.
		EventStore: mcp.NewMemoryEventStore(nil),
	})
	h.modern = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		srv, _ := r.Context().Value(serverKey{}).(*mcp.Server)
		return srv
	}, &mcp.StreamableHTTPOptions{
		Stateless:                  true,
		Logger:                     h.opts.Session.Logger,
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        h.opts.MaxBodyBytes,
	})
	return h
}

// ServeHTTP serves one request of the MCP Streamable HTTP transport.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	agent := h.opts.Agent(r)
	caller := heddle.Caller(r.Context())
	if h.isModern(r) {
		h.serveModern(w, r, agent, caller)
		return
	}
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		if s := h.session(id); s != nil {
			switch {
			case s.agent != agent:
				writeError(w, http.StatusNotFound, diag.New(diag.NotFound, "this MCP session is not one of agent %s", diag.Clip(agent)))
				return
			case !sameCaller(s.opts.Caller, caller):
				writeError(w, http.StatusForbidden, diag.New(diag.Forbidden, "this MCP session belongs to another caller"))
				return
			}
			s.presented(r.Context())
		} else if h.opts.Fleet && h.serveMoved(w, r, id, agent, caller) {
			return
		}
		h.mcp.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		h.mcp.ServeHTTP(w, r)
		return
	}
	id := ""
	if h.opts.Fleet {
		id = h.sealedSessionID(r, agent, caller)
	}
	var ts Toolset
	var err error
	if id == "" {
		id = rand.Text()
		ts, err = h.opts.Toolset(agent)
	} else {
		ts, err = h.opts.SessionToolset(agent, id, caller)
	}
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	so := h.opts.Session
	so.Agent, so.Caller = agent, caller
	s, err := newSession(r.Context(), ts, &so, func() string { return id }, nil)
	if err != nil {
		if r.Context().Err() == nil {
			writeError(w, http.StatusBadGateway, err)
		}
		return
	}
	s.presented(r.Context())
	hs := &httpSession{session: s, agent: agent}
	s.ended = func() { h.forget(id) }
	// The session is known by its id once the host is initialized.
	inner := s.srv
	inner.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch {
			case method == "notifications/initialized":
				h.remember(id, hs, req.GetSession().(*mcp.ServerSession))
			case method == "initialize" && h.opts.Fleet:
				// In a fleet the host's notifications/initialized may
				// reach another worker: the session is this worker's from
				// its initialize, and follows changes from then on.
				ss := req.GetSession().(*mcp.ServerSession)
				h.remember(id, hs, ss)
				s.start(ss)
			}
			return next(ctx, method, req)
		}
	})
	h.mcp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), serverKey{}, inner)))
}

// isModern reports whether a request is of 2026-07-28 or later: its
// MCP-Protocol-Version header says so, or, with no header and no session,
// its _meta does (go-sdk then refuses it for the missing header, -32020).
func (h *Handler) isModern(r *http.Request) bool {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return v >= modernVersion
	}
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		return false
	}
	body, err := h.peekBody(r)
	if err != nil {
		return false
	}
	var msg struct {
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false
	}
	v, _ := msg.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v >= modernVersion
}

// serveModern serves a request of 2026-07-28 with a server of its own,
// for the caller on its context: its toolset is its conversation's. A
// subscriptions/listen request follows the agent's changes and its
// conversation's load_tools while it lasts (until Close).
func (h *Handler) serveModern(w http.ResponseWriter, r *http.Request, agent string, caller heddle.Identity) {
	if r.Method != http.MethodPost {
		h.modern.ServeHTTP(w, r) // 405, as go-sdk answers
		return
	}
	ts, key, err := h.opts.Conversation(r, agent)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	so := h.opts.Session
	so.Agent, so.Caller = agent, caller
	if key != "" {
		so.Loaded = func() { h.loaded(key) }
	}
	listen := r.Header.Get("Mcp-Method") == "subscriptions/listen"
	if !listen {
		so.Watch = nil
	}
	var sc scope
	switch r.Header.Get("Mcp-Method") { // go-sdk refuses one that is not the body's
	case "tools/call":
		name := r.Header.Get("Mcp-Name")
		sc = func(tool string) bool { return tool == name }
	case "tools/list", "subscriptions/listen":
	default:
		sc = noTools
	}
	s, err := newSession(r.Context(), ts, &so, nil, sc)
	if err != nil {
		if r.Context().Err() == nil {
			writeError(w, http.StatusBadGateway, err)
		}
		return
	}
	ctx := r.Context()
	if listen {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(h.ctx, cancel)
		defer stop()
		var loaded <-chan struct{}
		if key != "" {
			ch, forget := h.listen(key)
			defer forget()
			loaded = ch
		}
		followed := make(chan struct{})
		go func() {
			defer close(followed)
			s.follow(ctx, loaded)
		}()
		defer func() { cancel(); <-followed }()
	}
	h.modern.ServeHTTP(w, r.WithContext(context.WithValue(ctx, serverKey{}, s.srv)))
}

// listen registers a subscriptions/listen request of conversation key.
func (h *Handler) listen(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.listeners[key] == nil {
		h.listeners[key] = map[chan struct{}]bool{}
	}
	h.listeners[key][ch] = true
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.listeners[key], ch)
		if len(h.listeners[key]) == 0 {
			delete(h.listeners, key)
		}
		h.mu.Unlock()
	}
}

// loaded tells the listeners of conversation key that it loaded tools.
func (h *Handler) loaded(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.listeners[key] {
		select {
		case ch <- struct{}{}:
		default: // one is waiting to be read already
		}
	}
}

// statusOf is the HTTP status of an error answered before MCP is.
func statusOf(err error) int {
	switch diag.CodeOf(err) {
	case diag.AgentUnknown:
		return http.StatusNotFound
	case diag.RequestInvalid:
		return http.StatusBadRequest
	case diag.StateUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}

func (h *Handler) session(id string) *httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}

// remember records an initialized session; once the Handler is closed, it
// closes the session instead.
func (h *Handler) remember(id string, s *httpSession, ss *mcp.ServerSession) {
	h.mu.Lock()
	closed := h.closed
	if !closed {
		s.ss = ss
		h.sessions[id] = s
	}
	h.mu.Unlock()
	if closed {
		go ss.Close()
	}
}

func (h *Handler) forget(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.sessions, id)
}

// Close ends every session and waits for what each started to end. Later
// sessions are closed as soon as they are initialized.
func (h *Handler) Close() error {
	h.stop()
	h.mu.Lock()
	h.closed = true
	open := slices.Collect(maps.Values(h.sessions))
	h.mu.Unlock()
	for _, s := range open {
		_ = s.ss.Close()
		s.wait()
	}
	h.closeMoved()
	return nil
}

// sameCaller reports whether two identities are the same caller.
func sameCaller(a, b heddle.Identity) bool {
	return a.Subject == b.Subject && slices.Equal(a.Roles, b.Roles) && maps.Equal(a.Claims, b.Claims)
}

// writeError answers err as the front door does: {"error": {"code",
// "message"}} with status.
func writeError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": diag.CodeOf(err), "message": err.Error()}})
}
