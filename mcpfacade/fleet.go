package mcpfacade

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
)

// A session of 2025-11-25 in a fleet. With HandlerOptions.Fleet, a
// session's id is sealed (Sealer, the fleet's key): it holds the agent,
// the caller and the host's initialize parameters, so that any worker a
// load balancer sends the session's next request to opens it and serves
// the session as the worker that began it would — a moved session. A
// moved session's toolset is HandlerOptions.SessionToolset's (a fleet
// keeps its loaded tools in the shared store); the stream of a GET is the
// worker's own, and a host resumes one (Last-Event-ID) only at the worker
// that wrote it.

// SessionTTL is how long a sealed session id is accepted after the
// session began; a host whose session is older is answered 404 and, as the
// protocol says, begins a new one.
const SessionTTL = 24 * time.Hour

// sessionInit is what a sealed session id holds besides its binding.
type sessionInit struct {
	Params     *mcp.InitializeParams `json:"p"`
	Negotiated string                `json:"v"`
}

// peekInitialize returns the initialize request's parameters of a POST
// (its body read, bounded, and put back); nil for any other request.
func (h *Handler) peekInitialize(r *http.Request) *mcp.InitializeParams {
	body, err := h.peekBody(r)
	if err != nil {
		return nil
	}
	var msg struct {
		Method string                `json:"method"`
		Params *mcp.InitializeParams `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "initialize" || msg.Params == nil {
		return nil
	}
	return msg.Params
}

// sealedSessionID is a new session's id for a fleet: the session sealed,
// bound to agent and caller; "" when it cannot be (the body is no
// initialize request), and a local id is used.
func (h *Handler) sealedSessionID(r *http.Request, agent string, caller heddle.Identity) string {
	p := h.peekInitialize(r)
	if p == nil {
		return ""
	}
	negotiated := p.ProtocolVersion
	if !slices.Contains(handshakeVersions, negotiated) {
		negotiated = handshakeVersions[0]
	}
	id, err := h.opts.Session.Sealer.sealFor(state{Kind: stateSession, Session: &sessionInit{Params: p, Negotiated: negotiated}},
		bind(agent, caller, "", nil), SessionTTL)
	if err != nil {
		return ""
	}
	return id
}

// peekBody reads a request's body, at most MaxBodyBytes and one byte,
// and puts it back for whoever serves the request.
func (h *Handler) peekBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, io.EOF
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, h.opts.MaxBodyBytes+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	return body, err
}

// movedSession is a session begun at another worker, served here.
type movedSession struct {
	*session
	agent     string
	transport *mcp.StreamableServerTransport
	ss        *mcp.ServerSession
	idle      *time.Timer
}

// serveMoved serves a request of a session this worker does not hold: one
// whose sealed id opens, for this agent and caller, is served by a session
// made here from it (kept while requests reach it); it reports false for
// an id that does not open, which go-sdk answers 404 as an unknown
// session.
func (h *Handler) serveMoved(w http.ResponseWriter, r *http.Request, id, agent string, caller heddle.Identity) bool {
	m, err := h.moved(r.Context(), id, agent, caller)
	switch {
	case err != nil && diag.Has(err, diag.NotFound):
		writeError(w, http.StatusNotFound, err)
		return true
	case err != nil && diag.Has(err, diag.Forbidden):
		writeError(w, http.StatusForbidden, err)
		return true
	case err != nil:
		writeError(w, statusOf(err), err)
		return true
	case m == nil:
		return false
	}
	m.idle.Reset(h.opts.SessionTimeout)
	m.presented(r.Context())
	if r.Method == http.MethodDelete {
		h.forgetMoved(id)
		_ = m.ss.Close()
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	m.transport.ServeHTTP(w, r)
	return true
}

// moved returns the moved session of id, made from its sealed id when
// this worker has none: nil when id does not open as a session.
func (h *Handler) moved(ctx context.Context, id, agent string, caller heddle.Identity) (*movedSession, error) {
	h.mu.Lock()
	m := h.movedSessions[id]
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, nil
	}
	if m != nil {
		switch {
		case m.agent != agent:
			return nil, diag.New(diag.NotFound, "this MCP session is not one of agent %s", diag.Clip(agent))
		case !sameCaller(m.opts.Caller, caller):
			return nil, diag.New(diag.Forbidden, "this MCP session belongs to another caller")
		}
		return m, nil
	}
	st, err := h.opts.Session.Sealer.openSession(id)
	if err != nil || st.Session == nil || st.Session.Params == nil {
		return nil, nil // not a session of this fleet: unknown
	}
	switch {
	case st.Agent != agent:
		return nil, diag.New(diag.NotFound, "this MCP session is not one of agent %s", diag.Clip(agent))
	case st.Caller != callerDigest(caller):
		return nil, diag.New(diag.Forbidden, "this MCP session belongs to another caller")
	}
	ts, err := h.opts.SessionToolset(agent, id, caller)
	if err != nil {
		return nil, err
	}
	so := h.opts.Session
	so.Agent, so.Caller = agent, caller
	s, err := newSession(ctx, ts, &so, func() string { return id }, nil)
	if err != nil {
		return nil, err
	}
	t := &mcp.StreamableServerTransport{SessionID: id}
	ss, err := s.srv.Connect(context.Background(), t, &mcp.ServerSessionOptions{State: &mcp.ServerSessionState{
		InitializeParams: st.Session.Params, InitializedParams: &mcp.InitializedParams{},
		NegotiatedProtocolVersion: st.Session.Negotiated, LogLevel: "info",
	}})
	if err != nil {
		return nil, err
	}
	m = &movedSession{session: s, agent: agent, transport: t, ss: ss}
	s.ended = func() { h.forgetMoved(id) }
	m.idle = time.AfterFunc(h.opts.SessionTimeout, func() { _ = ss.Close() })
	h.mu.Lock()
	if other := h.movedSessions[id]; other != nil || h.closed {
		// Another request made it first, or the Handler closed meanwhile.
		h.mu.Unlock()
		m.idle.Stop()
		_ = ss.Close()
		if other == nil {
			return nil, nil
		}
		return other, nil
	}
	h.movedSessions[id] = m
	h.mu.Unlock()
	s.start(ss)
	return m, nil
}

func (h *Handler) forgetMoved(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if m := h.movedSessions[id]; m != nil {
		m.idle.Stop()
		delete(h.movedSessions, id)
	}
}

// closeMoved ends every moved session and waits for what each started.
func (h *Handler) closeMoved() {
	h.mu.Lock()
	var open []*movedSession
	for _, m := range h.movedSessions {
		open = append(open, m)
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range open {
		wg.Go(func() {
			m.idle.Stop()
			_ = m.ss.Close()
			m.wait()
		})
	}
	wg.Wait()
}
