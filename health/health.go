// Package health serves a runtime's probes over HTTP:
//
//	/livez   200 while the process serves at all
//	/readyz  200 when every required dependency is ready, else 503; the body
//	         is the dependency report (runtime.Report) as JSON
//
// A report that is not ready is checked again before /readyz answers: the
// dependencies that are down are attempted at once (runtime.Runtime.Recheck)
// and the answer waits up to half a second for them, so that a worker
// whose required dependency is back turns ready on the next probe — an
// unready worker gets no traffic, so no call would find out.
//
// Kubernetes wiring: point the liveness probe at /livez and the readiness
// probe at /readyz, so a worker whose required MCP server is down stops
// receiving traffic without being restarted, while the supervisor
// reconnects it.
//
//	mux := http.NewServeMux()
//	health.Register(mux, rt)
package health

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/heddlehq/heddle/runtime"
)

// Reporter is what the handlers read; *runtime.Runtime implements it.
type Reporter interface {
	Health() runtime.Report
}

// Rechecker is a Reporter whose dependencies can be attempted on demand;
// *runtime.Runtime implements it.
type Rechecker interface {
	Recheck(ctx context.Context)
}

// RecheckWait bounds the re-check of a report that is not ready: well
// under the one second Kubernetes gives a probe by default.
const RecheckWait = 500 * time.Millisecond

// Register adds /livez and /readyz to mux.
func Register(mux *http.ServeMux, r Reporter) {
	mux.HandleFunc("GET /livez", Live)
	mux.Handle("GET /readyz", Ready(r))
}

// Live answers 200 "ok".
func Live(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// Ready answers with the dependency report: 200 when ready, 503 when not.
// When the report is not ready and r is a Rechecker, the dependencies that
// are down are re-checked first, for at most RecheckWait.
func Ready(r Reporter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rep := r.Health()
		if rc, ok := r.(Rechecker); ok && !rep.Ready {
			ctx, cancel := context.WithTimeout(req.Context(), RecheckWait)
			rc.Recheck(ctx)
			cancel()
			rep = r.Health()
		}
		w.Header().Set("Content-Type", "application/json")
		if !rep.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	})
}
