// Package serve is the worker's front door: the HTTP server `heddle serve`
// runs. It serves the probes (package health), the Prometheus metrics
// (package metrics) and the invoke API under /v1/, decides who the caller
// of each /v1/ request is (serve.auth) before anything is called, and holds
// the worker to serve.limits and serve.hosts.
//
//	GET  /livez, /readyz                     the probes; no caller needed, never refused
//	GET  /metrics                            Prometheus metrics
//	GET  /v1/openapi.json                    the API's OpenAPI 3.1 document
//	GET  /v1/agents                          the agents: name, description, tool count
//	GET  /v1/agents/{agent}/tools            the agent's tools
//	POST /v1/agents/{agent}/tools/{tool}     one call; the body is the arguments
//	POST, GET, DELETE /mcp/{agent}           the agent's tools as an MCP server (Streamable HTTP)
//
// The tools of a grant that says defer are listed, and may be called,
// only once the conversation's model has loaded them with load_tools: a
// request names its conversation with the Heddle-Conversation header
// (see ConversationHeader), and a request without one is a conversation
// of its own.
//
// Every error is JSON, {"error": {"code", "message"}}, with a code, and
// repeats a name the caller sent only up to diag.EchoLimit characters.
//
// A worker of its own:
//
//	s, err := serve.New(ctx, rt, &serve.Options{Addr: ln.Addr()})
//	if err != nil {
//		return err
//	}
//	go s.Serve(ln)
//	<-ctx.Done()
//	return s.Shutdown(drainCtx)
//
// With serve.probes.listen, the worker serves the probes (and /metrics) on
// a listener of their own too, so that a kubelet never waits behind callers:
//
//	go s.ServeProbes(probeLn)
//
// A worker that reloads its configuration passes its runtime.Generations
// (Options.Generations): each request then runs on the generation current
// when it began, and /readyz says which one that is.
package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/health"
	"github.com/heddlehq/heddle/mcpfacade"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
	"github.com/heddlehq/heddle/statestore"
	"github.com/heddlehq/heddle/wire"
)

// Options are what a Server needs besides the runtime and its plan. The
// zero value of each field has the default its comment gives.
type Options struct {
	// Addr is the address the server listens on; it decides whether
	// localhost is an accepted Host and whether a server without
	// serve.auth may run. Default: loopback.
	Addr net.Addr
	// Metrics, when set, is served on /metrics.
	Metrics *metrics.Metrics
	// Logger receives the server's records. Default: discarded.
	Logger *slog.Logger
	// Secrets resolves the references of serve.auth (tokens). Default: the
	// runtime's resolver of the plan's ai.secrets.
	Secrets secrets.Resolver
	// HTTPClient fetches an issuer's discovery document and keys. Default:
	// a client with the standard transport and a 10 s timeout.
	HTTPClient *http.Client
	// Generations, when set, is where each request takes the runtime it
	// runs on (a reload swaps it; see runtime.Generations), and /readyz
	// and /metrics say which generation is live. The runtime given to New
	// must be its current one; its plan's serve: section holds for the
	// server's life. Default: the runtime given to New, alone.
	Generations *runtime.Generations
	// TracerProvider, when set, makes each request under /v1/ and /mcp/ a
	// SERVER span by OpenTelemetry's HTTP conventions, the caller's
	// traceparent its parent and, on /v1/, the call's spans its children.
	// The probes and /metrics are not traced. Default: no span of the
	// server's own (a call's spans still continue the caller's traceparent).
	TracerProvider trace.TracerProvider
	// State is serve.state opened: with kind redis, what a fleet shares
	// (conversations, the facade's sessions and accepted states) lives
	// there. Default: the worker's own memory.
	State *statestore.Store
}

// A Server is the HTTP front door of one runtime. It is an http.Handler,
// safe for concurrent use, and serves listeners itself (Serve) with the
// timeouts and connection bound of serve.limits.
type Server struct {
	gens   *runtime.Generations
	cfg    plan.Serve
	auth   Authenticator
	log    *slog.Logger
	mux    *http.ServeMux
	hosts  hosts
	origin *http.CrossOriginProtection
	// guarded is mux behind origin's check.
	guarded http.Handler
	// inFlight holds one token per call or listing (of the agents, or of
	// an agent's tools) being served; it has room for
	// serve.limits.max_in_flight.
	inFlight chan struct{}
	conns    *connLimit
	srv      *http.Server
	// probes serves serve.probes.listen (ServeProbes), with a bound of its
	// own on its connections.
	probes     *http.Server
	probeConns *connLimit
	drain      *drainState
	// convs are the conversations' views (Heddle-Conversation).
	convs *conversations
	// state is Options.State; nil for memory.
	state   *statestore.Store
	metrics *metrics.Metrics // nil: none
	// mcp is the MCP facade at /mcp/{agent} (mcp.go).
	mcp *mcpfacade.Handler
}

// New returns the front door of rt, as its plan's serve: section says. It
// fails, with a code, when serve.auth cannot be set up (an issuer that
// cannot be reached, a token reference that does not resolve) or is
// missing on an address that is not loopback.
func New(ctx context.Context, rt *runtime.Runtime, opts *Options) (*Server, error) {
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := rt.Plan().Serve
	gens := opts.Generations
	if gens == nil {
		gens = runtime.NewGenerations(rt)
	}
	s := &Server{gens: gens, cfg: cfg, log: log, mux: http.NewServeMux(),
		hosts:      newHosts(opts.Addr, cfg.Hosts),
		origin:     http.NewCrossOriginProtection(),
		inFlight:   make(chan struct{}, max(cfg.Limits.MaxInFlight, 1)),
		conns:      newConnLimit(mainConnBound(cfg.Limits.MaxConnections, log)),
		probeConns: newConnLimit(ProbeMaxConnections),
		drain:      newDrainState(),
		convs:      newConversations(),
		state:      opts.State,
		metrics:    opts.Metrics,
	}
	a, err := newAuthenticator(ctx, cfg.Auth, authOptions(rt, opts), log)
	if err != nil {
		return nil, err
	}
	s.auth = a
	s.convs.shared = opts.State.Conversations(ConversationIdle)
	if s.mcp, err = s.newMCP(ctx, authOptions(rt, opts).Secrets); err != nil {
		return nil, err
	}
	s.origin.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		Error(w, http.StatusForbidden, diag.New(diag.Forbidden, "a browser sent this request from a page of another origin (Sec-Fetch-Site or Origin): the API is for services, not for pages"))
	}))
	s.routes(opts.Metrics)
	s.guarded = s.origin.Handler(s.mux)
	if opts.TracerProvider != nil {
		s.guarded = traced(s.guarded, opts.TracerProvider)
	}
	s.srv = s.httpServer()
	s.probes = s.probeServer(opts.Metrics)
	return s, nil
}

// routes registers every path with the methods it answers; another method
// is 405 REQUEST_INVALID with Allow, and a path not registered is 404
// NOT_FOUND.
func (s *Server) routes(m *metrics.Metrics) {
	allowed := map[string][]string{}
	var order []string
	handle := func(method, path string, h http.Handler) {
		if _, ok := allowed[path]; !ok {
			order = append(order, path)
		}
		allowed[path] = append(allowed[path], method)
		s.mux.Handle(method+" "+path, h)
	}
	handle("GET", "/livez", http.HandlerFunc(health.Live))
	handle("GET", "/readyz", health.Ready(s.readiness()))
	if m != nil {
		handle("GET", "/metrics", s.metricsHandler(m.Handler(s.gens)))
	}
	handle("GET", "/v1/openapi.json", s.authenticated(serveOpenAPI))
	handle("GET", "/v1/agents", s.authenticated(s.listAgents))
	handle("GET", "/v1/agents/{agent}/tools", s.authenticated(s.listTools))
	handle("POST", "/v1/agents/{agent}/tools/{tool}", jsonOnly(s.call))
	s.routeMCP(handle)
	for _, path := range order {
		methods := allowed[path]
		if slices.Contains(methods, "GET") {
			methods = append(methods, "HEAD")
		}
		allow := strings.Join(methods, ", ")
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			Error(w, http.StatusMethodNotAllowed, diag.New(diag.RequestInvalid, "this path answers %s, not the method of this request", allow))
		})
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		Error(w, http.StatusNotFound, diag.New(diag.NotFound, "no such path; GET /v1/openapi.json lists the paths this worker serves"))
	})
}

// ServeHTTP answers one request. The probes answer whatever the Host
// header: a load balancer or the kubelet may probe by any name or address;
// during a drain (Shutdown) /readyz answers 503 SHUTTING_DOWN.
// Every other path refuses a Host that is not accepted (DNS rebinding) and
// a browser's request from a page of another origin, with 403 FORBIDDEN.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.drain.enter()
	defer s.drain.leave()
	if r.URL.Path == "/readyz" && s.drain.draining() {
		Error(w, http.StatusServiceUnavailable, errDraining)
		return
	}
	if r.URL.Path == "/livez" || r.URL.Path == "/readyz" {
		s.mux.ServeHTTP(w, r)
		return
	}
	defer s.conns.readingBody(r)()
	r, done := s.drain.track(r)
	defer done()
	if !s.hosts.accepts(r.Host) {
		Error(w, http.StatusForbidden, diag.New(diag.Forbidden, "the Host header names a host this worker does not answer to: only its address, localhost on loopback, and serve.hosts are accepted (DNS rebinding)"))
		return
	}
	s.guarded.ServeHTTP(w, r)
}

// authenticated runs h for a request whose caller serve.auth accepts, with
// that caller in the request's context (and, for serve.auth kind jwt, the
// caller's token, for servers called as the caller); it answers 401
// otherwise.
func (s *Server) authenticated(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ctx, ok := s.authenticate(w, r); ok {
			h(w, r.WithContext(ctx))
		}
	}
}

// authenticate returns r's context with the caller serve.auth accepts
// (and, for kind jwt, the caller's token) when it accepts one; otherwise
// it answers 401 or 403 and reports false.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (context.Context, bool) {
	id, err := s.auth.Authenticate(r)
	if err != nil {
		if diag.Has(err, diag.Unauthenticated) {
			w.Header().Set("WWW-Authenticate", challenge(s.auth, err))
			Error(w, http.StatusUnauthorized, err)
			return nil, false
		}
		Error(w, http.StatusForbidden, err)
		return nil, false
	}
	ctx := heddle.WithCaller(r.Context(), id)
	if l, ok := s.auth.(tokenLender); ok {
		ctx = l.withToken(ctx, r)
	}
	return ctx, true
}

// jsonOnly runs h for a request that says its body is JSON, and answers
// 415 otherwise. A browser page may POST to any address without asking
// (a form, or fetch with text/plain), but never with application/json:
// that needs a CORS preflight, which this server does not answer.
func jsonOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		if ct == "application/json" { // as most clients send it: nothing to parse
			h(w, r)
			return
		}
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			Error(w, http.StatusUnsupportedMediaType, diag.New(diag.RequestInvalid, "the body must be JSON, sent with Content-Type: application/json"))
			return
		}
		h(w, r)
	}
}

// admit takes one of serve.limits.max_in_flight places, or answers 503
// TOO_BUSY with Retry-After and reports false. The caller calls release
// when done.
func (s *Server) admit(w http.ResponseWriter) bool {
	select {
	case s.inFlight <- struct{}{}:
		return true
	default:
		w.Header().Set("Retry-After", "1")
		Error(w, http.StatusServiceUnavailable, diag.New(diag.TooBusy, "this worker already serves serve.limits.max_in_flight (%d) calls; retry later", cap(s.inFlight)))
		return false
	}
}

// release gives back the place admit took.
func (s *Server) release() { <-s.inFlight }

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w) {
		return
	}
	defer s.release()
	rt, done := s.gens.Acquire()
	defer done()
	agents := rt.Plan().Agents
	out := make([]Agent, 0, len(agents))
	for _, name := range slices.Sorted(maps.Keys(agents)) {
		ts, err := rt.Toolset(name)
		if err != nil {
			s.runtimeError(w, r, err)
			return
		}
		tools, err := ts.Tools(r.Context())
		if err != nil {
			s.runtimeError(w, r, err)
			return
		}
		out = append(out, Agent{Name: name, Description: agents[name].Description, Tools: len(tools)})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	rt, done := s.gens.Acquire()
	defer done()
	ts, err := rt.Toolset(r.PathValue("agent"))
	if err != nil {
		s.runtimeError(w, r, err)
		return
	}
	if !s.admit(w) {
		return
	}
	defer s.release()
	v, err := s.convs.view(r, ts)
	if err != nil {
		Error(w, statusOfView(err), err)
		return
	}
	tools, err := v.Tools(r.Context())
	if err != nil {
		s.runtimeError(w, r, err)
		return
	}
	if q := r.URL.Query(); q.Has("format") || q.Has("strict") {
		writeProviderTools(w, q, tools)
		return
	}
	writeJSON(w, http.StatusOK, wire.Tools(tools))
}

// call runs one tool, as the caller serve.auth accepts (authenticate). The
// call's context, with the caller, is passed along rather than made the
// request's, which would copy the request on every call. The body is read
// before the call takes its place among serve.limits.max_in_flight, so
// that a client that stalls its body holds a connection (until
// serve.limits.read_timeout_ms), never a place.
func (s *Server) call(w http.ResponseWriter, r *http.Request) {
	ctx, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	rt, done := s.gens.Acquire()
	defer done()
	ts, err := rt.Toolset(r.PathValue("agent"))
	if err != nil {
		s.runtimeError(w, r, err)
		return
	}
	args, status, err := s.readArgs(w, r)
	if err != nil {
		Error(w, status, err)
		return
	}
	on, keep, err := s.callsOn(ctx, r, ts)
	if err != nil {
		Error(w, statusOfView(err), err)
		return
	}
	if !s.admit(w) {
		return
	}
	defer s.release()
	res, err := on.Call(incomingTrace(ctx, r.Header), r.PathValue("tool"), args)
	if err != nil {
		s.runtimeError(w, r, err)
		return
	}
	if err := keep(ctx); err != nil {
		// The call ran; what it loaded could not be kept, and the caller
		// must not believe it was.
		Error(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Result(res))
}

// toolCaller is what a call runs on: a conversation's view, or the
// toolset itself.
type toolCaller interface {
	Call(ctx context.Context, name string, args map[string]any, opts ...runtime.CallOption) (*mcp.CallToolResult, error)
}

// callsOn returns what r's call runs on, and the keep of its view
// (conversations.viewKeep). A request outside any conversation, to a
// toolset none of whose grants defers its tools, runs on the toolset
// itself: a view of its own would pass the call on to it unchanged.
func (s *Server) callsOn(ctx context.Context, r *http.Request, ts *runtime.Toolset) (toolCaller, func(context.Context) error, error) {
	if r.Header.Get(ConversationHeader) == "" && !ts.Deferred() {
		return ts, noKeep, nil
	}
	return s.convs.viewKeep(ctx, r, ts)
}

// statusOfView is the status of a conversation that could not be found:
// 503 when the shared store could not be reached, 400 for a malformed id.
func statusOfView(err error) int {
	if diag.Has(err, diag.StateUnavailable) {
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// runtimeError answers an error of the runtime: 404 for an agent the plan
// does not have, 503 once the runtime is closed or a drain cut the request,
// 504 for a call past its tool_timeout_ms, 502 for a listing or call that
// failed otherwise. An error without a code (a kind's own failure) is
// answered TOOL_UNAVAILABLE, its reason logged rather than sent. A caller
// that is gone is not answered.
func (s *Server) runtimeError(w http.ResponseWriter, r *http.Request, err error) {
	if cut := context.Cause(r.Context()); errors.Is(cut, errCut) {
		Error(w, http.StatusServiceUnavailable, cut)
		return
	}
	if r.Context().Err() != nil {
		return
	}
	status := http.StatusBadGateway
	switch diag.CodeOf(err) {
	case diag.AgentUnknown:
		status = http.StatusNotFound
	case diag.ShuttingDown:
		status = http.StatusServiceUnavailable
	case diag.ToolTimeout:
		status = http.StatusGatewayTimeout
	case "":
		s.log.Warn("a call or listing failed", "agent", r.PathValue("agent"), "tool", diag.Clip(r.PathValue("tool")), "err", err)
		err = diag.New(diag.ToolUnavailable, "the call or listing failed inside the worker; its log says why")
	}
	Error(w, status, err)
}

// readArgs reads a call's body, at most serve.limits.max_body_bytes, as a
// JSON object of arguments; an empty body is no arguments.
func (s *Server) readArgs(w http.ResponseWriter, r *http.Request) (map[string]any, int, error) {
	limit := s.cfg.Limits.MaxBodyBytes
	tooLarge := func() error {
		return diag.New(diag.RequestTooLarge, "the request body is over serve.limits.max_body_bytes (%d bytes)", limit)
	}
	if r.ContentLength > int64(limit) {
		return nil, http.StatusRequestEntityTooLarge, tooLarge()
	}
	body, err := readBody(http.MaxBytesReader(w, r.Body, int64(limit)), r.ContentLength)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, http.StatusRequestEntityTooLarge, tooLarge()
	case err != nil:
		return nil, http.StatusBadRequest, diag.New(diag.RequestInvalid, "the request body could not be read whole within serve.limits.read_timeout_ms")
	}
	var args map[string]any
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &args); err != nil || args == nil {
			return nil, http.StatusBadRequest, diag.New(diag.RequestInvalid, "the body must be a JSON object of arguments")
		}
	}
	return args, 0, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if raw, ok := v.(json.RawMessage); ok { // encoded already (Result)
		_, _ = w.Write(append(raw, '\n'))
		return
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// Error answers err as {"error": {"code", "message"}} with status.
func Error(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": diag.CodeOf(err), "message": err.Error()}})
}

var _ http.Handler = (*Server)(nil)
