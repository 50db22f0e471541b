// Package serve is the worker's front door: the HTTP handler `heddle serve`
// answers with. It serves the probes (package health), the Prometheus
// metrics (package metrics) and the invoke API under /v1/, and decides who
// the caller of each /v1/ request is (serve.auth) before anything is called.
//
//	GET  /livez, /readyz                     the probes; no caller needed
//	GET  /metrics                            Prometheus metrics
//	GET  /v1/agents/{agent}/tools            the agent's tools
//	POST /v1/agents/{agent}/tools/{tool}     one call; the body is the arguments
//
// Every error is JSON, {"error": {"code", "message"}}, with a code.
package serve

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/health"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
)

// Options are what a Server needs besides the runtime and its plan. The
// zero value of each field has the default its comment gives.
type Options struct {
	// Addr is the address the server listens on; it decides the Host
	// headers accepted and whether a server without serve.auth may run.
	// Default: loopback.
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
}

// A Server is the HTTP front door of one runtime. It is an http.Handler,
// safe for concurrent use.
type Server struct {
	rt   *runtime.Runtime
	cfg  plan.Serve
	auth Authenticator
	log  *slog.Logger
	mux  *http.ServeMux
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
	s := &Server{rt: rt, cfg: rt.Plan().Serve, log: log, mux: http.NewServeMux()}
	a, err := newAuthenticator(ctx, s.cfg.Auth, authOptions(rt, opts), log)
	if err != nil {
		return nil, err
	}
	s.auth = a
	health.Register(s.mux, rt)
	if opts.Metrics != nil {
		s.mux.Handle("GET /metrics", s.metricsHandler(opts.Metrics.Handler(rt)))
	}
	s.mux.HandleFunc("GET /v1/agents/{agent}/tools", s.authenticated(s.listTools))
	s.mux.HandleFunc("POST /v1/agents/{agent}/tools/{tool}", s.authenticated(s.call))
	return s, nil
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// authenticated runs h for a request whose caller serve.auth accepts, with
// that caller in the request's context; it answers 401 otherwise.
func (s *Server) authenticated(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := s.auth.Authenticate(r)
		if err != nil {
			if diag.Has(err, diag.Unauthenticated) {
				w.Header().Set("WWW-Authenticate", challenge(s.auth, err))
				Error(w, http.StatusUnauthorized, err)
				return
			}
			Error(w, http.StatusForbidden, err)
			return
		}
		h(w, r.WithContext(heddle.WithCaller(r.Context(), id)))
	}
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	ts, err := s.rt.Toolset(r.PathValue("agent"))
	if err != nil {
		Error(w, http.StatusNotFound, err)
		return
	}
	tools, err := ts.Tools(r.Context())
	if err != nil {
		Error(w, http.StatusBadGateway, err)
		return
	}
	writeJSON(w, http.StatusOK, Tools(tools))
}

func (s *Server) call(w http.ResponseWriter, r *http.Request) {
	ts, err := s.rt.Toolset(r.PathValue("agent"))
	if err != nil {
		Error(w, http.StatusNotFound, err)
		return
	}
	limit := s.cfg.Limits.MaxBodyBytes
	var args map[string]any
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil || len(body) > limit {
		Error(w, http.StatusRequestEntityTooLarge, diag.New(diag.RequestTooLarge, "the request body is over %d bytes, or could not be read", limit))
		return
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := json.Unmarshal(body, &args); err != nil {
			Error(w, http.StatusBadRequest, diag.New(diag.RequestInvalid, "the body must be a JSON object of arguments"))
			return
		}
	}
	res, err := ts.Call(r.Context(), r.PathValue("tool"), args)
	if err != nil {
		status := http.StatusInternalServerError
		if diag.Has(err, diag.ToolTimeout) {
			status = http.StatusGatewayTimeout
		}
		Error(w, status, err)
		return
	}
	writeJSON(w, http.StatusOK, Result(res))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// Error answers err as {"error": {"code", "message"}} with status.
func Error(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": diag.CodeOf(err), "message": err.Error()}})
}
