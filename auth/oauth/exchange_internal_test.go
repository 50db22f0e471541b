package oauth

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/secrets"
)

// TestExchangedCacheBounded: the cache of exchanged tokens holds at most
// its bound; when full, an expired token goes first, else the one that
// expires soonest, and the newest is always kept.
func TestExchangedCacheBounded(t *testing.T) {
	now := time.Now()
	c := newExchangedCache(3)
	key := func(i int) [32]byte { return digest(string(rune('a' + i))) }
	c.put(key(0), cachedToken{value: "t0", until: now.Add(3 * time.Minute)}, now)
	c.put(key(1), cachedToken{value: "t1", until: now.Add(time.Minute)}, now)
	c.put(key(2), cachedToken{value: "t2", until: now.Add(2 * time.Minute)}, now)
	c.put(key(3), cachedToken{value: "t3", until: now.Add(time.Second)}, now)
	if c.len() != 3 {
		t.Fatalf("%d tokens, want 3", c.len())
	}
	if _, ok := c.get(key(1), now); ok {
		t.Error("the token that expires soonest was kept when the cache was full")
	}
	if tok, ok := c.get(key(3), now); !ok || tok != "t3" {
		t.Error("the newest token was not kept")
	}
	later := now.Add(90 * time.Second)
	c.put(key(4), cachedToken{value: "t4", until: later.Add(time.Hour)}, later)
	if _, ok := c.get(key(0), later); !ok {
		t.Error("a live token went while an expired one stayed")
	}
	if _, ok := c.get(key(3), later); ok {
		t.Error("an expired token is served")
	}
	for i := range 1000 {
		c.put(digest(string(rune(i+100))), cachedToken{value: "t", until: later.Add(time.Hour)}, later)
	}
	if c.len() != 3 {
		t.Errorf("%d tokens, want at most 3", c.len())
	}
}

// TestTokenLifetime: a token is used until renewBefore (or a quarter of
// its lifetime) before it expires; one whose lifetime is not given, for
// reuseUnknown; expires_in may be a number or a string.
func TestTokenLifetime(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, tt := range []struct {
		expiresIn string
		want      time.Duration
	}{
		{`3600`, 3600*time.Second - renewBefore},
		{`"3600"`, 3600*time.Second - renewBefore},
		{`60`, 60*time.Second - 15*time.Second},
		{``, reuseUnknown},
		{`0`, reuseUnknown},
		{`"soon"`, reuseUnknown},
	} {
		tr := tokenResponse{ExpiresIn: json.RawMessage(tt.expiresIn)}
		if got := tr.until(start).Sub(start); got != tt.want {
			t.Errorf("expires_in %s: used for %s, want %s", tt.expiresIn, got, tt.want)
		}
	}
}

// TestExpiryOf: the exp of a JWT is read; anything else has none.
func TestExpiryOf(t *testing.T) {
	if exp, ok := expiryOf("eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjE3MDAwMDAwMDB9.c2ln"); !ok || exp.Unix() != 1700000000 {
		t.Errorf("exp = %v, %v", exp, ok)
	}
	for _, tok := range []string{"opaque-token", "a.b.c", "a.e30.c", "a.eyJleHAiOiJ4In0.c", "a.b"} {
		if _, ok := expiryOf(tok); ok {
			t.Errorf("%q has an expiry", tok)
		}
	}
}

// FuzzTokenEndpointAnswer: whatever a token endpoint answers to an
// exchange, the caller gets a bearer token with no white space in it, or
// a coded error that repeats neither the caller's token nor the client
// secret.
func FuzzTokenEndpointAnswer(f *testing.F) {
	f.Add(200, `{"access_token":"abc","token_type":"Bearer","expires_in":60}`)
	f.Add(200, `{"access_token":"abc","token_type":"bearer","expires_in":"3600","issued_token_type":"urn:ietf:params:oauth:token-type:jwt"}`)
	f.Add(400, `{"error":"invalid_grant","error_description":"cannot exchange subject-token-value"}`)
	f.Add(400, `{"error":"subject-token-value"}`)
	f.Add(401, `{"error":"invalid_client"}`)
	f.Add(200, `{"access_token":"a b","token_type":"Bearer"}`)
	f.Add(200, `{"access_token":"abc","token_type":"N_A","issued_token_type":"subject-token-value"}`)
	f.Add(200, `{"access_token":"abc","token_type":"Bearer","issued_token_type":"subject-token-value"}`)
	f.Add(200, `{"access_token":"abc","token_type":"Bearer","expires_in":1e300}`)
	f.Add(503, `upstream trouble`)
	f.Add(200, `not json`)
	const subject, secret = "subject-token-value", "client-secret-value"
	f.Fuzz(func(t *testing.T, status int, body string) {
		if status < 100 || status > 999 {
			status = 200
		}
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader(body)), Header: http.Header{}, Request: r}, nil
		})}
		cfg := Config{Name: "server f", ClientID: "c", ClientSecret: secrets.NewValue(secret),
			IdPTokenEndpoint: "https://idp.example/token", Resource: "https://mcp.example/mcp"}
		x := newExchanger(cfg, client, slog.New(slog.DiscardHandler), newScrubber(secret), context.Background())
		tok, err := x.exchanged(context.Background(), subject)
		if err != nil {
			if diag.CodeOf(err) == "" {
				t.Errorf("an error without a code: %v", err)
			}
			if msg := err.Error(); strings.Contains(msg, subject) || strings.Contains(msg, secret) {
				t.Errorf("the error repeats a secret: %s", msg)
			}
			return
		}
		if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
			t.Errorf("accepted a token %q", tok)
		}
	})
}
