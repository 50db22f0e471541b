// Package health serves a runtime's probes over HTTP:
//
//	/livez   200 while the process serves at all
//	/readyz  200 when every required dependency is ready, else 503; the body
//	         is the dependency report (runtime.Report) as JSON
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
	"encoding/json"
	"net/http"

	"github.com/heddlehq/heddle/runtime"
)

// Reporter is what the handlers read; *runtime.Runtime implements it.
type Reporter interface {
	Health() runtime.Report
}

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
func Ready(r Reporter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rep := r.Health()
		w.Header().Set("Content-Type", "application/json")
		if !rep.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	})
}
