package serve

import (
	"context"
	"net/http"
	"time"

	"github.com/heddlehq/heddle/mcpfacade"
	"github.com/heddlehq/heddle/runtime"
)

// newMCP is the MCP facade at /mcp/{agent}: each agent's toolset over
// Streamable HTTP, a session per initialize, for the caller serve.auth
// authenticated (fixed for the session). The Host and Origin checks of
// ServeHTTP apply to it as to /v1/.
func (s *Server) newMCP() *mcpfacade.Handler {
	return mcpfacade.NewHandler(&mcpfacade.HandlerOptions{
		// One view per session, on the live generation at each call.
		Toolset: func(agent string) (mcpfacade.Toolset, error) {
			return newSessionView(s.gens, agent)
		},
		Agent:        func(r *http.Request) string { return r.PathValue("agent") },
		Session:      mcpfacade.Options{Watch: s.watch, Logger: s.log},
		MaxBodyBytes: int64(s.cfg.Limits.MaxBodyBytes),
	})
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
// not bound by serve.limits.write_timeout_ms, DELETE ends a session.
func (s *Server) routeMCP(handle func(method, path string, h http.Handler)) {
	h := s.authenticated(func(w http.ResponseWriter, r *http.Request) {
		rt, done := s.gens.Acquire()
		_, err := rt.Toolset(r.PathValue("agent"))
		done()
		if err != nil {
			s.runtimeError(w, r, err)
			return
		}
		switch r.Method {
		case http.MethodPost:
			if !s.admit(w) {
				return
			}
			defer s.release()
		case http.MethodGet:
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
