package plugin_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/auth/plugin"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/secrets"
)

// noopTransport answers every request at once with one shared response, so
// a benchmark measures the strategy alone.
type noopTransport struct{ resp *http.Response }

func (t noopTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return t.resp, nil
}

func okResponse() *http.Response {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}}
}

// newRequest is a request shaped like go-sdk's: a JSON-RPC POST with a body
// it can replay.
func newRequest() (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", "4Q2ZKJ7V3C5XN1")
	return req, nil
}

func refTo(s string) *config.Ref {
	r := config.ParseRef(s)
	return &r
}

// BenchmarkStrategyFastPath measures what a strategy adds to one request
// once its headers are cached: Wrap(rt).RoundTrip(req) against a
// RoundTripper that does nothing.
func BenchmarkStrategyFastPath(b *testing.B) {
	srv := startSession(b, time.Hour)
	env := authlive.Env{
		Name:    "server bench",
		Purpose: "mcp",
		Secrets: secrets.New(secrets.Options{LookupEnv: func(k string) (string, bool) {
			v, ok := map[string]string{
				"TOKEN":           "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJiZW5jaCJ9.c2lnbmF0dXJl",
				"HEADERS":         "X-Api-Key=abc123def456",
				"AGENT_BOOTSTRAP": bootstrap,
			}[k]
			return v, ok
		}}),
		Plugins: map[string]*plan.AuthPlugin{"agent-session": {Command: pluginBin, SHA256: pluginSum}},
	}
	cases := []struct {
		name string
		spec *plan.Auth
	}{
		{"bearer", &plan.Auth{Kind: "bearer", Settings: map[string]any{"token_ref": refTo("${env:TOKEN}")}}},
		{"static", &plan.Auth{Kind: "static", Settings: map[string]any{"headers_ref": refTo("${env:HEADERS}")}}},
		{"plugin", &plan.Auth{Kind: "agent-session", Plugin: true, Settings: map[string]any{
			"session_url":   srv.SessionURL(),
			"secret_path":   secretPath,
			"bootstrap_ref": refTo("${env:AGENT_BOOTSTRAP}"),
		}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s, err := authlive.Build(context.Background(), env, c.spec)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			rt := s.Wrap(noopTransport{resp: okResponse()})
			req, err := newRequest()
			if err != nil {
				b.Fatal(err)
			}
			warm, err := rt.RoundTrip(req) // fetches the plugin's headers
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, warm.Body)
			calls := plugin.RPCCalls()
			b.ReportAllocs()
			for b.Loop() {
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				_ = resp.Body.Close()
			}
			if got := plugin.RPCCalls() - calls; got != 0 {
				b.Fatalf("the fast path made %d plugin calls", got)
			}
		})
	}
}
