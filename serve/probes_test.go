package serve_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/serve"
)

// probeFront is a front door serving holdAgent as h on a main listener and
// its probes on a listener of their own (ServeProbes); shutdown drains it,
// once, and is called again when the test ends.
func probeFront(t *testing.T) (main, probes *front, shutdown func() error) {
	t.Helper()
	m := metrics.New()
	rt := openTestRuntime(t, trustLoopback+inMemoryServer, map[string]string{"h": holdAgent}, m)
	var lns [2]net.Listener
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
	}
	s, err := serve.New(context.Background(), rt, &serve.Options{Addr: lns[0].Addr(), Metrics: m})
	if err != nil {
		lns[0].Close()
		lns[1].Close()
		t.Fatal(err)
	}
	served, probed := make(chan error, 1), make(chan error, 1)
	go func() { served <- s.Serve(lns[0]) }()
	go func() { probed <- s.ServeProbes(lns[1]) }()
	shutdown = sync.OnceValue(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return s.Shutdown(ctx)
	})
	fronts := make([]*front, 2)
	for i, ln := range lns {
		tr := &http.Transport{}
		fronts[i] = &front{t: t, url: "http://" + ln.Addr().String(), addr: ln.Addr().String(), rt: rt, s: s,
			client: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
		t.Cleanup(tr.CloseIdleConnections)
	}
	t.Cleanup(func() {
		if err := shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		for _, ch := range []chan error{served, probed} {
			if err := <-ch; !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("Serve or ServeProbes returned %v", err)
			}
		}
	})
	return fronts[0], fronts[1], shutdown
}

// TestProbeListener: the probe listener answers /livez, /readyz and
// /metrics, and nothing else, each error JSON with a code; during a drain
// its /readyz answers 503 SHUTTING_DOWN and its /livez 200, until the
// drain is over and it closes.
func TestProbeListener(t *testing.T) {
	main, probes, shutdown := probeFront(t)
	for _, tc := range []struct {
		method, path string
		status       int
		code         diag.Code
	}{
		{"GET", "/livez", 200, ""},
		{"HEAD", "/livez", 200, ""},
		{"GET", "/readyz", 200, ""},
		{"GET", "/metrics", 200, ""},
		{"GET", "/v1/agents", 404, diag.NotFound},
		{"POST", "/v1/agents/h/tools/serve_echo", 404, diag.NotFound},
		{"POST", "/livez", 405, diag.RequestInvalid},
	} {
		r := probes.send(probes.request(tc.method, tc.path, ""))
		if r.status != tc.status {
			t.Errorf("%s %s on the probe listener: %d %s, want %d", tc.method, tc.path, r.status, r.body, tc.status)
			continue
		}
		if tc.code != "" {
			if got := codes(t, r); !slices.Equal(got, []diag.Code{tc.code}) {
				t.Errorf("%s %s on the probe listener: %v, want %s", tc.method, tc.path, got, tc.code)
			}
		}
	}
	if r := probes.get("/metrics"); !r.contains("heddle_") {
		t.Errorf("/metrics on the probe listener holds no heddle_ metric:\n%.300s", r.body)
	}

	// A drain held open by a call.
	held := make(chan *response, 1)
	go func() { held <- main.post("/v1/agents/h/tools/serve_hold", `{}`) }()
	<-holdStarted
	drained := make(chan error, 1)
	go func() { drained <- shutdown() }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := probes.get("/readyz")
		if r.status == 503 {
			if got := codes(t, r); !slices.Equal(got, []diag.Code{diag.ShuttingDown}) {
				t.Errorf("/readyz on the probe listener during a drain: %v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz on the probe listener still answers %d 5s into a drain", r.status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := probes.get("/livez"); r.status != 200 {
		t.Errorf("/livez on the probe listener during a drain: %d %s", r.status, r.body)
	}
	releaseHeld()
	if r := <-held; r.status != 200 {
		t.Errorf("the call that held the drain: %d %s", r.status, r.body)
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	probes.client.CloseIdleConnections()
	if c, err := net.DialTimeout("tcp", probes.addr, time.Second); err == nil {
		c.Close()
		t.Error("the probe listener still accepts connections once the drain is over")
	}
}

// TestProbeListenerBound: the probe listener holds serve.ProbeMaxConnections
// connections; with that many stalled in their header, a probe is answered
// once the one stalled longest has been for serve.StallAge, in its place.
func TestProbeListenerBound(t *testing.T) {
	_, probes, _ := probeFront(t)
	for i := range serve.ProbeMaxConnections {
		c, err := net.Dial("tcp", probes.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := fmt.Fprintf(c, "GET /livez HTTP/1.1\r\nHost: %s\r\nX-Slow: ", probes.addr); err != nil {
			t.Fatalf("stalled connection %d: %v", i, err)
		}
	}
	start := time.Now()
	if r := probes.get("/livez"); r.status != 200 {
		t.Fatalf("/livez past the probe listener's bound: %d %s", r.status, r.body)
	}
	switch d := time.Since(start); {
	case d < serve.StallAge/2:
		t.Errorf("/livez past the probe listener's bound took %v: it did not wait for a stalled connection's place", d)
	case d > serve.StallAge+time.Second:
		t.Errorf("/livez past the probe listener's bound took %v, want about serve.StallAge (%v)", d, serve.StallAge)
	}
}
