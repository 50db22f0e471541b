package serve

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"time"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/mcpfacade"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
)

// newMCP is the MCP facade at /mcp/{agent}: each agent's toolset over
// Streamable HTTP, a session per initialize, for the caller serve.auth
// authenticated (fixed for the session). The Host and Origin checks of
// ServeHTTP apply to it as to /v1/.
//
// A request of protocol 2026-07-28 has no session: it belongs to the
// conversation its Heddle-Conversation header names, as on /v1/, or to one
// of its own. The state of its input_required results is sealed with
// serve.approval_key_ref's key, or one of the worker's own.
func (s *Server) newMCP(ctx context.Context, res secrets.Resolver) (*mcpfacade.Handler, error) {
	sealer, err := s.sealer(ctx, res)
	if err != nil {
		return nil, err
	}
	if s.state.Shared() && s.cfg.ApprovalKeyRef == nil {
		s.log.Warn("serve.state is shared but serve.approval_key_ref is not set: MCP sessions of 2025-11-25 and 2026-07-28 approval states stay with the worker that made them; give every worker the same key")
	}
	return mcpfacade.NewHandler(&mcpfacade.HandlerOptions{
		// One view per session, on the live generation at each call.
		Toolset: func(agent string) (mcpfacade.Toolset, error) {
			return newSessionView(s.gens, agent)
		},
		Conversation: s.mcpConversation,
		// Sessions move between the workers of a fleet when they share
		// the state and the key that seals the sessions' ids.
		Fleet:          s.state.Shared() && s.cfg.ApprovalKeyRef != nil,
		SessionToolset: s.sessionToolset,
		Agent:          func(r *http.Request) string { return r.PathValue("agent") },
		Session:        mcpfacade.Options{Watch: s.watch, Logger: s.log, Sealer: sealer},
		MaxBodyBytes:   int64(s.cfg.Limits.MaxBodyBytes),
	}), nil
}

// sealer is the facade's Sealer: serve.approval_key_ref's keys, the
// states it accepted remembered in serve.state's store when it is shared;
// or a key of this worker's own (its states open nowhere else).
func (s *Server) sealer(ctx context.Context, res secrets.Resolver) (*mcpfacade.Sealer, error) {
	ref := s.cfg.ApprovalKeyRef
	if ref == nil {
		return mcpfacade.RandomSealer(0), nil
	}
	v, err := res.Resolve(ctx, *ref)
	if err != nil {
		return nil, diag.Wrap(diag.CodeOf(err), err, "serve.approval_key_ref: %v", err)
	}
	sealer, err := mcpfacade.NewSealer(v.Reveal(), 0)
	if err != nil {
		return nil, diag.New(diag.ConfigValueInvalid, "serve.approval_key_ref (%s): %v", ref, err)
	}
	if sp := s.state.Spent(); sp != nil {
		sealer.WithSpent(sp)
	}
	return sealer, nil
}

// mcpConversation is the toolset a request of 2026-07-28 serves: its
// conversation's view (Heddle-Conversation), kept for its caller, or a
// view of its own; each call and listing runs on the live generation.
func (s *Server) mcpConversation(r *http.Request, agent string) (mcpfacade.Toolset, string, error) {
	id := r.Header.Get(ConversationHeader)
	if id == "" {
		v, err := newSessionView(s.gens, agent)
		return v, "", err
	}
	if !validConversationID(id) {
		return nil, "", diag.New(diag.RequestInvalid, "the %s header must be 1 to %d characters of A-Z, a-z, 0-9 and ._:-", ConversationHeader, MaxConversationID)
	}
	subject := heddle.Caller(r.Context()).Subject
	c := &conversationToolset{s: s, subject: subject, id: id, agent: agent}
	return liveView(c.view), subject + "\x00" + agent + "\x00" + id, nil
}

// sessionToolset is the toolset of a facade session of 2025-11-25 in a
// fleet: a conversation the session's id names (hashed: an id may be
// longer than a conversation's), kept in the shared store, so that a
// session moved to another worker has what it loaded.
func (s *Server) sessionToolset(agent, sessionID string, caller heddle.Identity) (mcpfacade.Toolset, error) {
	sum := sha256.Sum256([]byte(sessionID))
	c := &conversationToolset{s: s, subject: caller.Subject, id: "mcp-session." + base64.RawURLEncoding.EncodeToString(sum[:]), agent: agent}
	return liveView(c.view), nil
}

// conversationToolset is a kept conversation's view of an agent's tools,
// found again on the live generation at each use.
type conversationToolset struct {
	s                  *Server
	subject, id, agent string
}

func (c *conversationToolset) view(ctx context.Context) (*runtime.View, func(), error) {
	rt, done := c.s.gens.Acquire()
	ts, err := rt.Toolset(c.agent)
	if err != nil {
		done()
		return nil, nil, err
	}
	v, keep, err := c.s.convs.viewFor(ctx, ts, c.subject, c.id)
	if err != nil {
		done()
		return nil, nil, err
	}
	return v, func() {
		if err := keep(ctx); err != nil {
			c.s.log.Warn("a conversation's loaded tools could not be kept", "agent", c.agent, "code", diag.CodeOf(err))
		}
		done()
	}, nil
}

// watch subscribes an MCP session to the changes of its agent's tools: the
// upstream changes of the generation live now, and each reload, which may
// change any agent's tools: the session hears of the reload once (it then
// lists the new generation's tools, and go-sdk tells the host when they
// differ) and follows the new generation's changes from then on.
func (s *Server) watch(ctx context.Context) <-chan runtime.Event {
	out := make(chan runtime.Event, 1)
	go func() {
		defer close(out)
		for changed := s.gens.Changed(); changed != nil; changed = s.gens.Changed() {
			gctx, cancel := context.WithCancel(ctx)
			swapped := forwardEvents(ctx, s.gens.Current().Watch(gctx), changed, out)
			cancel()
			if !swapped || s.gens.Changed() == nil {
				return
			}
			select {
			case out <- runtime.Event{Kind: runtime.ToolUpdated}:
			default: // a change is waiting to be read already: it re-lists too
			}
		}
	}()
	return out
}

// forwardEvents passes one generation's events to out until changed closes
// (and reports true) or ctx ends (false).
func forwardEvents(ctx context.Context, events <-chan runtime.Event, changed <-chan struct{}, out chan<- runtime.Event) bool {
	for {
		select {
		case e, ok := <-events:
			if !ok { // the runtime closed: wait for the next one
				events = nil
				continue
			}
			select {
			case out <- e:
			case <-changed:
				return true
			case <-ctx.Done():
				return false
			}
		case <-changed:
			return true
		case <-ctx.Done():
			return false
		}
	}
}

// routeMCP registers /mcp/{agent}: POST carries the host's messages (a
// call's POST takes a place among serve.limits.max_in_flight), GET the
// session's stream of the server's own messages (list_changed), which is
// not bound by serve.limits.write_timeout_ms, nor is a 2026-07-28 host's
// subscriptions/listen; DELETE ends a session.
func (s *Server) routeMCP(handle func(method, path string, h http.Handler)) {
	h := s.authenticated(func(w http.ResponseWriter, r *http.Request) {
		rt, done := s.gens.Acquire()
		_, err := rt.Toolset(r.PathValue("agent"))
		done()
		if err != nil {
			s.runtimeError(w, r, err)
			return
		}
		switch {
		case r.Method == http.MethodPost && r.Header.Get("Mcp-Method") == "subscriptions/listen":
			// A 2026-07-28 host's stream of the server's own messages, as
			// GET is a session's: it lasts as long as the host listens (go-sdk
			// refuses a header that does not match the body's method).
			_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		case r.Method == http.MethodPost:
			if !s.admit(w) {
				return
			}
			defer s.release()
		case r.Method == http.MethodGet:
			_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		}
		s.mcp.ServeHTTP(w, r)
	})
	for _, m := range []string{"POST", "GET", "DELETE"} {
		handle(m, "/mcp/{agent}", h)
	}
}

// closeMCP ends every MCP session, from a goroutine: a session's Close
// waits for its calls, which the drain may have to cut first. The channel
// closes once every session has ended.
func (s *Server) closeMCP() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.mcp.Close()
	}()
	return done
}

// waitMCP waits for closeMCP's sessions to end, at most CutWait.
func waitMCP(done <-chan struct{}) {
	t := time.NewTimer(CutWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
