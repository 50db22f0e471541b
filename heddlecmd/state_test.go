package heddlecmd

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/testredis"
	"github.com/heddlehq/heddle/runtime/driver"
)

// TestServeFleetRates: two heddle serve processes with serve.state kind
// redis, on_error: open, count agent a's {calls: 3, per: 1m} together:
// three calls are admitted over both, the next refused at either; both
// list the store, ready, on /readyz. With Redis stopped each worker admits
// by its own counts, counted on heddle_state_fallbacks_total, and is not
// ready.
func TestServeFleetRates(t *testing.T) {
	srv := testredis.Start(t)
	t.Setenv("HEDDLE_TEST_REDIS_URL", srv.URL())
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"config/api.yaml": "serve:\n  auth: {kind: none}\n" +
			"  state: {kind: redis, url_ref: \"${env:HEDDLE_TEST_REDIS_URL}\", on_error: open, timeout_ms: 300}\n" +
			"ai:\n  mcp_servers:\n    srv: {transport: stdio, command: " + strconv.Quote(testmcpBin) + "}\n",
		"agents/a/agent.yaml": "capabilities: [{kind: mcp, server: srv}]\npolicies:\n  limits:\n    - {calls: 3, per: 1m}\n",
	})
	ws := []*worker{startWorkerIn(t, dir), startWorkerIn(t, dir)}
	c := &http.Client{Timeout: 10 * time.Second}
	store := func(w *worker) driver.Dependency {
		t.Helper()
		for _, d := range readyz(t, c, w.base).Dependencies {
			if d.Kind == "state" {
				return d
			}
		}
		t.Fatalf("%s/readyz lists no state store", w.base)
		return driver.Dependency{}
	}
	for _, w := range ws {
		if d := store(w); d.Name != "redis" || d.State != driver.StateReady || !d.Required {
			t.Errorf("%s: the store %+v, want redis, ready, required", w.base, d)
		}
	}
	var got []string
	for i := range 6 {
		code, _ := outcome(c, ws[i%2].base, "a", "echo", `{"text": "hi"}`)
		got = append(got, code)
	}
	if want := "ok ok ok TOOL_RATE_LIMITED TOOL_RATE_LIMITED TOOL_RATE_LIMITED"; strings.Join(got, " ") != want {
		t.Errorf("six calls over two workers: %s, want %s", strings.Join(got, " "), want)
	}

	srv.Stop()
	for _, w := range ws {
		code, _ := outcome(c, w.base, "a", "echo", `{"text": "store down"}`)
		if code != "ok" {
			t.Errorf("%s with the store down, on_error open: %s, want ok", w.base, code)
		}
		if m := get(t, c, w.base+"/metrics"); !strings.Contains(m, `heddle_state_fallbacks_total{agent="a"} 1`) {
			t.Errorf("%s/metrics lacks the fallback", w.base)
		}
		if d := store(w); d.State != driver.StateDown {
			t.Errorf("%s: the store %+v with Redis stopped, want down", w.base, d)
		}
		if res, err := c.Get(w.base + "/readyz"); err != nil || res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s/readyz with the store down: %v %v, want 503", w.base, res.Status, err)
		} else {
			res.Body.Close()
		}
	}
}
