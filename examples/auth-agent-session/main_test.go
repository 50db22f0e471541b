package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle/auth/pluginsdk"
	"github.com/heddlehq/heddle/examples/auth-agent-session/sessiontest"
)

const (
	path   = "/agents/test/sales"
	secret = "bootstrap-CANARY-77d0c1"
)

func configured(t *testing.T, srv *sessiontest.Server, bootstrap string) *agentSession {
	t.Helper()
	s := newAgentSession()
	err := s.Configure(context.Background(), map[string]string{
		"session_url": srv.SessionURL(), "secret_path": path, "bootstrap_ref": bootstrap,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func code(err error) pluginsdk.ErrorCode {
	var e *pluginsdk.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestHeadersAndRenew(t *testing.T) {
	srv := sessiontest.Start(sessiontest.Options{TTL: time.Minute, Secrets: map[string]string{path: secret}})
	defer srv.Close()
	s := configured(t, srv, secret)
	ctx := context.Background()

	h1, err := s.Headers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := h1.Values.Get("Authorization"); !strings.HasPrefix(got, "Bearer ast_") {
		t.Fatalf("Authorization = %.14q…, want a bearer token", got)
	}
	if d := time.Until(h1.ExpiresAt); d < 50*time.Second || d > time.Minute {
		t.Errorf("expires in %s, want about a minute", d)
	}
	h2, err := s.Headers(ctx) // cached in the plugin too
	if err != nil || h2.Values.Get("Authorization") != h1.Values.Get("Authorization") || srv.Mints() != 1 {
		t.Fatalf("second Headers minted again (mints %d, err %v)", srv.Mints(), err)
	}
	h3, err := s.Renew(ctx, pluginsdk.ReasonUnauthorized)
	if err != nil {
		t.Fatal(err)
	}
	if h3.Values.Get("Authorization") == h1.Values.Get("Authorization") || srv.Mints() != 2 {
		t.Fatalf("Renew returned the refused token (mints %d)", srv.Mints())
	}
}

func TestFailures(t *testing.T) {
	srv := sessiontest.Start(sessiontest.Options{Secrets: map[string]string{path: secret}})
	defer srv.Close()
	ctx := context.Background()

	_, err := configured(t, srv, "wrong-CANARY-secret").Headers(ctx)
	if code(err) != pluginsdk.CodeDenied {
		t.Errorf("wrong secret: %v, want DENIED", err)
	}
	srv.SetDown(true)
	_, err2 := configured(t, srv, secret).Headers(ctx)
	if code(err2) != pluginsdk.CodeUnavailable {
		t.Errorf("endpoint down: %v, want UNAVAILABLE", err2)
	}
	for _, e := range []error{err, err2} {
		if e != nil && (strings.Contains(e.Error(), "CANARY") || strings.Contains(e.Error(), secret)) {
			t.Errorf("error %q contains the secret", e)
		}
	}
}

func TestConfigure(t *testing.T) {
	for name, settings := range map[string]map[string]string{
		"no url":       {"bootstrap_ref": secret},
		"plain http":   {"session_url": "http://sessions.example.com/s", "bootstrap_ref": secret},
		"userinfo":     {"session_url": "https://u:p@sessions.example.com/s", "bootstrap_ref": secret},
		"no bootstrap": {"session_url": "https://sessions.example.com/s"},
		"unknown":      {"session_url": "https://sessions.example.com/s", "bootstrap_ref": secret, "scope": "x"},
	} {
		t.Run(name, func(t *testing.T) {
			err := newAgentSession().Configure(context.Background(), settings)
			if code(err) != pluginsdk.CodeInvalidSettings {
				t.Fatalf("Configure = %v, want INVALID_SETTINGS", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q repeats the secret", err)
			}
		})
	}
	for _, u := range []string{"https://sessions.example.com/s", "http://127.0.0.1:8080/s", "http://localhost/s", "http://[::1]:9/s"} {
		if err := newAgentSession().Configure(context.Background(), map[string]string{"session_url": u, "bootstrap_ref": secret}); err != nil {
			t.Errorf("Configure(%s) = %v", u, err)
		}
	}
}
