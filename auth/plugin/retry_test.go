package plugin_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/auth/plugin"
	"github.com/heddlehq/heddle/auth/pluginsdk"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/secrets"
)

// buildStrategy builds the example plugin's strategy against srv directly,
// without a runtime.
func buildStrategy(t *testing.T, srv interface{ SessionURL() string }) authlive.Strategy {
	t.Helper()
	env := authlive.Env{
		Name:    "server direct",
		Purpose: "mcp",
		Secrets: secrets.New(secrets.Options{LookupEnv: func(k string) (string, bool) {
			return bootstrap, k == "AGENT_BOOTSTRAP"
		}}),
		Plugins: map[string]*plan.AuthPlugin{"agent-session": {Command: pluginBin, SHA256: pluginSum}},
	}
	s, err := authlive.Build(context.Background(), env, &plan.Auth{Kind: "agent-session", Plugin: true, Settings: map[string]any{
		"session_url":   srv.SessionURL(),
		"secret_path":   secretPath,
		"bootstrap_ref": refTo("${env:AGENT_BOOTSTRAP}"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// refusing is a server that answers 401 to everything, recording bodies.
type refusing struct {
	mu     sync.Mutex
	bodies []string
}

func (r *refusing) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, string(b))
	r.mu.Unlock()
	http.Error(w, "no", http.StatusUnauthorized)
}

// TestRetryOnce: a server that refuses every token gets the request twice
// — the second time with a renewed token and the same body — and the
// second 401 is returned: one renewal, one retry, no loop.
func TestRetryOnce(t *testing.T) {
	srv := startSession(t, time.Minute)
	target := &refusing{}
	ts := httptest.NewServer(target)
	defer ts.Close()
	client := &http.Client{Transport: buildStrategy(t, srv).Wrap(http.DefaultTransport)}

	resp, err := client.Post(ts.URL, "application/json", strings.NewReader(`{"id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want the second 401", resp.StatusCode)
	}
	if len(target.bodies) != 2 || target.bodies[0] != `{"id":1}` || target.bodies[1] != `{"id":1}` {
		t.Fatalf("server saw bodies %q, want the same body twice", target.bodies)
	}
	if got := srv.Mints(); got != 2 {
		t.Errorf("tokens minted = %d, want 2 (one renewal)", got)
	}

	// A body that cannot be replayed is not retried.
	req, _ := http.NewRequest(http.MethodPost, ts.URL, io.NopCloser(strings.NewReader(`{"id":2}`)))
	req.GetBody = nil
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(target.bodies) != 3 || srv.Mints() != 2 {
		t.Errorf("unreplayable body: %d requests, %d mints; want 3, 2", len(target.bodies), srv.Mints())
	}
}

// TestRenewalFails: when the 401's renewal fails, the request fails with
// the plugin's code, and is not sent again.
func TestRenewalFails(t *testing.T) {
	srv := startSession(t, time.Minute)
	target := &refusing{}
	ts := httptest.NewServer(target)
	defer ts.Close()
	rt := buildStrategy(t, srv).Wrap(http.DefaultTransport)
	req, _ := http.NewRequest(http.MethodGet, ts.URL, nil)
	if resp, err := rt.RoundTrip(req); err == nil {
		resp.Body.Close()
	}
	srv.SetDown(true)
	n := len(target.bodies)
	_, err := rt.RoundTrip(req)
	if !diag.Has(err, diag.MCPAuthStrategyInvalid) || plugin.PluginCode(err) != pluginsdk.CodeUnavailable {
		t.Fatalf("err = %v (plugin code %q), want MCP_AUTH_STRATEGY_INVALID with UNAVAILABLE", err, plugin.PluginCode(err))
	}
	if got := len(target.bodies) - n; got != 1 {
		t.Errorf("server saw %d requests, want 1", got)
	}
}
