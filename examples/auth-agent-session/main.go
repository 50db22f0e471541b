// Command heddle-auth-agent-session is an example heddle auth plugin: the
// agent-session strategy of the deployment guide, written with
// [github.com/heddlehq/heddle/auth/pluginsdk]. The agent presents a
// long-lived bootstrap secret to a session endpoint and receives short-lived
// access tokens, which heddle sends as Authorization: Bearer <token> and
// renews when they expire or the server refuses them.
//
// Build it, take its checksum, and declare it:
//
//	go build -o bin/heddle-auth-agent-session ./examples/auth-agent-session
//	sha256sum bin/heddle-auth-agent-session
//
//	ai:
//	  auth_plugins:
//	    agent-session: {command: bin/heddle-auth-agent-session, sha256: "<the checksum>"}
//	  mcp_servers:
//	    orders:
//	      url: https://orders.internal.example.com/mcp
//	      auth:
//	        kind: agent-session
//	        session_url: https://orders.internal.example.com/auth/agent/session
//	        secret_path: /agents/prod/agent-sales      # who is asking (optional)
//	        bootstrap_ref: ${secrets:/agents/prod/agent-sales}
//
// Settings: session_url (https, or http on a loopback address), bootstrap_ref
// (resolved by heddle: the plugin receives the secret itself) and secret_path
// (optional; sent to the session endpoint to name the agent, as the guide's
// example does).
//
// The exchange: POST session_url with {"secret_path": …, "secret": <bootstrap
// secret>}; the answer is {"access_token": "…", "expires_in": <seconds>}.
// This is OAuth 2.0 client_credentials by another name — a new endpoint
// should implement that grant instead, and heddle's oauth strategy needs no
// plugin.
//
// Sessiontest, in the directory below, is a session endpoint and MCP server
// for tests.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/heddlehq/heddle/auth/pluginsdk"
)

func main() {
	pluginsdk.Serve(func() pluginsdk.Strategy { return newAgentSession() })
}

// agentSession is one server's strategy. heddle makes one per server that
// names the plugin.
type agentSession struct {
	client *http.Client

	// Set by Configure, then read-only.
	sessionURL string
	secretPath string
	bootstrap  string

	mu      sync.Mutex // serialises minting, guards token and expires
	token   string
	expires time.Time
}

func newAgentSession() *agentSession {
	return &agentSession{client: &http.Client{Timeout: 10 * time.Second}}
}

func (s *agentSession) Configure(_ context.Context, settings map[string]string) error {
	for k := range settings {
		switch k {
		case "session_url", "bootstrap_ref", "secret_path":
		default:
			return pluginsdk.Errorf(pluginsdk.CodeInvalidSettings, "unknown setting %q (accepted: session_url, bootstrap_ref, secret_path)", k)
		}
	}
	u, err := url.Parse(settings["session_url"])
	if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname()))) {
		return pluginsdk.Errorf(pluginsdk.CodeInvalidSettings, "session_url must be an https URL (or http on a loopback address)")
	}
	if u.User != nil {
		return pluginsdk.Errorf(pluginsdk.CodeInvalidSettings, "session_url must not carry credentials")
	}
	if settings["bootstrap_ref"] == "" {
		// Never echo the value: it is the secret.
		return pluginsdk.Errorf(pluginsdk.CodeInvalidSettings, "bootstrap_ref is required")
	}
	s.sessionURL, s.secretPath, s.bootstrap = u.String(), settings["secret_path"], settings["bootstrap_ref"]
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Headers returns the current token, minting one when there is none or it
// has expired.
func (s *agentSession) Headers(ctx context.Context) (pluginsdk.Headers, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == "" || !time.Now().Before(s.expires) {
		if err := s.mint(ctx); err != nil {
			return pluginsdk.Headers{}, err
		}
	}
	return s.headers(), nil
}

// Renew always mints: the current token expired or was refused.
func (s *agentSession) Renew(ctx context.Context, _ string) (pluginsdk.Headers, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.mint(ctx); err != nil {
		return pluginsdk.Headers{}, err
	}
	return s.headers(), nil
}

func (s *agentSession) headers() pluginsdk.Headers {
	return pluginsdk.Headers{
		Values:    http.Header{"Authorization": {"Bearer " + s.token}},
		ExpiresAt: s.expires,
	}
}

// mint exchanges the bootstrap secret for a token. Its errors name the
// endpoint's status, never the secret or a token.
func (s *agentSession) mint(ctx context.Context) error {
	body, err := json.Marshal(map[string]string{"secret_path": s.secretPath, "secret": s.bootstrap})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.sessionURL, bytes.NewReader(body))
	if err != nil {
		return pluginsdk.Errorf(pluginsdk.CodeInvalidSettings, "session_url: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return pluginsdk.Errorf(pluginsdk.CodeUnavailable, "the session endpoint did not answer: %v", unwrapURLError(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return pluginsdk.Errorf(pluginsdk.CodeDenied, "the session endpoint refused the bootstrap secret (HTTP %d)", resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return pluginsdk.Errorf(pluginsdk.CodeUnavailable, "the session endpoint answered HTTP %d", resp.StatusCode)
	}
	var out struct {
		AccessToken string  `json:"access_token"`
		ExpiresIn   float64 `json:"expires_in"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&out); err != nil {
		return pluginsdk.Errorf(pluginsdk.CodeUnavailable, "the session endpoint's answer is not JSON")
	}
	if out.AccessToken == "" || out.ExpiresIn <= 0 {
		return pluginsdk.Errorf(pluginsdk.CodeUnavailable, "the session endpoint's answer has no access_token or expires_in")
	}
	s.token = out.AccessToken
	s.expires = time.Now().Add(time.Duration(out.ExpiresIn * float64(time.Second)))
	return nil
}

// unwrapURLError drops *url.Error's wrapping, which repeats the URL.
func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return fmt.Errorf("%w", err)
}
