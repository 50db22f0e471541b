package serve

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/health"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/statestore"
)

// The probe listener's own bounds (serve.probes.listen): a kubelet or a
// load balancer probes with a connection or two at a time, and sends its
// request at once.
const (
	// ProbeMaxConnections bounds the connections the probe listener holds;
	// at the bound a new one makes room as on the main listener (Serve).
	ProbeMaxConnections = 16
	// ProbeReadTimeout bounds reading a probe's request, header included.
	ProbeReadTimeout = 2 * time.Second
	// ProbeWriteTimeout bounds writing an answer (/metrics is the longest).
	ProbeWriteTimeout = 10 * time.Second
	// ProbeIdleTimeout closes a keep-alive connection idle that long.
	ProbeIdleTimeout = 10 * time.Second
	probeMaxHeader   = 8 << 10
)

// ServeProbes answers /livez, /readyz and, when the server has metrics,
// /metrics on ln, a listener of their own (serve.probes.listen), until
// Shutdown has drained the server: so that a probe never waits behind the
// callers of the main listener, whatever they hold. It has an http.Server
// of its own, with short timeouts (ProbeReadTimeout, ProbeWriteTimeout,
// ProbeIdleTimeout) and at most ProbeMaxConnections connections. During a
// drain /readyz answers 503 SHUTTING_DOWN here too, and /livez 200; any
// other path is 404 NOT_FOUND. ServeProbes returns http.ErrServerClosed
// once Shutdown has returned.
func (s *Server) ServeProbes(ln net.Listener) error {
	return s.probes.Serve(s.probeConns.listener(ln))
}

// probeServer is the http.Server of ServeProbes.
func (s *Server) probeServer(m *metrics.Metrics) *http.Server {
	mux := http.NewServeMux()
	paths := map[string]http.Handler{
		"/livez":  http.HandlerFunc(health.Live),
		"/readyz": s.readyz(health.Ready(s.readiness())),
	}
	if m != nil {
		paths["/metrics"] = s.metricsHandler(m.Handler(s.gens))
	}
	for path, h := range paths {
		mux.Handle("GET "+path, h)
		mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Allow", "GET, HEAD")
			Error(w, http.StatusMethodNotAllowed, diag.New(diag.RequestInvalid, "this path answers GET, HEAD, not the method of this request"))
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		Error(w, http.StatusNotFound, diag.New(diag.NotFound, "no such path: the probe listener serves /livez, /readyz and /metrics; the API is on the main listener"))
	})
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: ProbeReadTimeout,
		ReadTimeout:       ProbeReadTimeout,
		WriteTimeout:      ProbeWriteTimeout,
		IdleTimeout:       ProbeIdleTimeout,
		MaxHeaderBytes:    probeMaxHeader,
		ConnState:         s.probeConns.track,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// readyz is h, answering 503 SHUTTING_DOWN during a drain.
func (s *Server) readyz(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.drain.draining() {
			Error(w, http.StatusServiceUnavailable, errDraining)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// readiness is what /readyz reports, on both listeners: the live
// runtime's dependencies and, with serve.state kind redis, the store the
// fleet shares, a required dependency: a worker that cannot reach it is
// not ready (its calls under rates would be refused, or counted by this
// worker alone, and its conversations could not be read).
func (s *Server) readiness() health.Reporter {
	if !s.state.Shared() {
		return s.gens
	}
	return readiness{gens: s.gens, state: s.state}
}

type readiness struct {
	gens  *runtime.Generations
	state *statestore.Store
}

// Health is the runtime's report with the store's line. A store that was
// ready is pinged first, within health.RecheckWait and
// serve.state.timeout_ms: nothing else would tell that it went away while
// no call needed it. One that was not is left to Recheck.
func (r readiness) Health() runtime.Report {
	if d, _ := r.state.Dependency(); d.State == driver.StateReady {
		ctx, cancel := context.WithTimeout(context.Background(), health.RecheckWait)
		_ = r.state.Check(ctx)
		cancel()
	}
	rep := r.gens.Health()
	if d, ok := r.state.Dependency(); ok {
		rep.Dependencies = append(slices.Clip(rep.Dependencies), d)
		rep.Ready = rep.Ready && d.State == driver.StateReady
	}
	return rep
}

// Recheck re-checks the runtime's dependencies and pings the store, at
// once, within ctx.
func (r readiness) Recheck(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.state.Check(ctx)
	}()
	r.gens.Recheck(ctx)
	<-done
}

var _ health.Rechecker = readiness{}
