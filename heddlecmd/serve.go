package heddlecmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/health"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/runtime"
)

// DefaultListen is serve's default address.
const DefaultListen = "127.0.0.1:8080"

// drainTimeout bounds how long serve waits for in-flight requests on
// SIGINT/SIGTERM.
const drainTimeout = 30 * time.Second

// maxRequestBytes caps an invoke request's body.
const maxRequestBytes = 1 << 20

func (e *env) serve(args []string) int {
	var (
		rf     runFlags
		listen string
	)
	if _, err := e.parseCommand("serve", args, 0, 0, func(fs *flag.FlagSet) {
		rf.register(fs)
		fs.StringVar(&listen, "listen", DefaultListen, "address to listen on")
	}); err != nil {
		return e.usageError(err)
	}
	log, err := rf.logger(e)
	if err != nil {
		return e.usageError(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := metrics.New()
	e.onCall = m.Observe
	rt, code := e.open(ctx, &rf, log, false)
	if rt == nil {
		return code
	}
	defer rt.Close()

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		e.printFailure(listenError(listen, err))
		return ExitFail
	}
	srv := &http.Server{Handler: Handler(rt, m), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stdout, "heddle: serving on http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		e.printFailure(diag.Wrap(diag.ListenFailed, err, "serving on %s stopped: %v", ln.Addr(), err))
		return ExitFail
	case <-ctx.Done():
	}
	log.Info("draining")
	dctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := srv.Shutdown(dctx); err != nil {
		fmt.Fprintf(e.stderr, "heddle: drain: %v\n", err)
	}
	return ExitOK
}

// listenError is the LISTEN_FAILED error of a --listen address serve cannot
// listen on, saying why in words (an address is not a secret).
func listenError(addr string, err error) error {
	var (
		addrErr *net.AddrError
		dnsErr  *net.DNSError
		why     string
	)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		why = "another process listens there"
	case errors.Is(err, syscall.EACCES):
		why = "permission denied (a port below 1024 needs privileges)"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		why = "its host is not an address of this machine"
	case errors.As(err, &dnsErr):
		why = "its host name does not resolve"
	case errors.As(err, &addrErr):
		why = fmt.Sprintf("it is not HOST:PORT (%s)", addrErr.Err)
	default:
		why = "listening failed"
	}
	return diag.Wrap(diag.ListenFailed, err, "cannot listen on --listen %s: %s", addr, why)
}

// Handler serves the runtime over HTTP:
//
//	GET  /livez, /readyz                     the probes (package health)
//	GET  /metrics                            Prometheus metrics (package metrics)
//	GET  /v1/agents/{agent}/tools            the agent's tools
//	POST /v1/agents/{agent}/tools/{tool}     one call; the body is the arguments
//
// The caller's identity comes from the X-Heddle-Subject, X-Heddle-Roles
// (comma-separated) and X-Heddle-Claim-NAME headers. The invoke API trusts
// them: expose it only behind a proxy that authenticates callers and sets
// these headers, never directly.
func Handler(rt *runtime.Runtime, m *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	health.Register(mux, rt)
	if m != nil {
		mux.Handle("GET /metrics", m.Handler(rt))
	}
	mux.HandleFunc("GET /v1/agents/{agent}/tools", func(w http.ResponseWriter, r *http.Request) {
		ts, err := rt.Toolset(r.PathValue("agent"))
		if err != nil {
			httpError(w, http.StatusNotFound, err)
			return
		}
		tools, err := ts.Tools(r.Context())
		if err != nil {
			httpError(w, http.StatusBadGateway, err)
			return
		}
		out := make([]jsonTool, len(tools))
		for i, t := range tools {
			out[i] = jsonTool{Name: t.Name, Source: t.Source, Server: t.Server, OriginalName: t.OriginalName,
				Description: t.Description, InputSchema: t.InputSchema, Destructive: t.Destructive, ReadOnly: t.ReadOnly}
		}
		writeHTTPJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("POST /v1/agents/{agent}/tools/{tool}", func(w http.ResponseWriter, r *http.Request) {
		ts, err := rt.Toolset(r.PathValue("agent"))
		if err != nil {
			httpError(w, http.StatusNotFound, err)
			return
		}
		var args map[string]any
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
		if err != nil || len(body) > maxRequestBytes {
			httpError(w, http.StatusRequestEntityTooLarge, diag.New(diag.RequestTooLarge, "the request body is over %d bytes, or could not be read", maxRequestBytes))
			return
		}
		if len(strings.TrimSpace(string(body))) > 0 {
			if err := json.Unmarshal(body, &args); err != nil {
				httpError(w, http.StatusBadRequest, diag.New(diag.RequestInvalid, "the body must be a JSON object of arguments"))
				return
			}
		}
		res, err := ts.Call(heddle.WithCaller(r.Context(), callerFromHeaders(r.Header)), r.PathValue("tool"), args)
		if err != nil {
			status := http.StatusInternalServerError
			if diag.Has(err, diag.ToolTimeout) {
				status = http.StatusGatewayTimeout
			}
			httpError(w, status, err)
			return
		}
		writeHTTPJSON(w, http.StatusOK, resultJSON(res))
	})
	return mux
}

func callerFromHeaders(h http.Header) heddle.Identity {
	c := heddle.Identity{Subject: h.Get("X-Heddle-Subject")}
	for _, r := range strings.Split(h.Get("X-Heddle-Roles"), ",") {
		if r = strings.TrimSpace(r); r != "" {
			c.Roles = append(c.Roles, r)
		}
	}
	const claimPrefix = "X-Heddle-Claim-"
	for k, vs := range h {
		if name, ok := strings.CutPrefix(k, claimPrefix); ok && name != "" && len(vs) > 0 {
			if c.Claims == nil {
				c.Claims = map[string]string{}
			}
			c.Claims[strings.ToLower(name)] = vs[0]
		}
	}
	return c
}

func writeHTTPJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func httpError(w http.ResponseWriter, status int, err error) {
	writeHTTPJSON(w, status, map[string]any{"error": map[string]any{"code": diag.CodeOf(err), "message": err.Error()}})
}
