package serve_test

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/testredis"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/serve"
)

// TestReadyzReportsTheStore: with serve.state kind redis the store is a
// required dependency on /readyz, on the main listener and the probe
// listener: ready while Redis answers, 503 with STATE_UNAVAILABLE while it
// does not, and ready again at the first probe once it is back (the probe
// pings it).
func TestReadyzReportsTheStore(t *testing.T) {
	srv := testredis.Start(t)
	f := startFrontWith(t, trustLoopback+inMemoryServer, map[string]string{"d": deferAgent}, serve.Options{State: sharedState(t, srv)})
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := f.s.ServeProbes(pln); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("ServeProbes: %v", err)
		}
	}()
	probes := &front{t: t, url: "http://" + pln.Addr().String(), client: f.client}
	readyz := func(on *front, want int, state driver.State) {
		t.Helper()
		r := on.get("/readyz")
		var rep runtime.Report
		if err := json.Unmarshal(r.body, &rep); err != nil || r.status != want {
			t.Fatalf("%s/readyz: %d %s, want %d", on.url, r.status, r.body, want)
		}
		for _, d := range rep.Dependencies {
			if d.Name == "redis" && d.Kind == "state" {
				if d.State != state || !d.Required || (state == driver.StateDown) != (d.Code == diag.StateUnavailable) {
					t.Errorf("%s/readyz: the store %+v, want %s, required", on.url, d, state)
				}
				return
			}
		}
		t.Errorf("%s/readyz: no store among %+v", on.url, rep.Dependencies)
	}
	for _, on := range []*front{f, probes} {
		readyz(on, http.StatusOK, driver.StateReady)
	}
	srv.Stop()
	for _, on := range []*front{f, probes} {
		readyz(on, http.StatusServiceUnavailable, driver.StateDown)
	}
	srv.Start()
	for _, on := range []*front{f, probes} {
		readyz(on, http.StatusOK, driver.StateReady)
	}
}
