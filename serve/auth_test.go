package serve

import (
	"context"
	"crypto/sha256"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
)

// TestNoAuth: without serve.auth, every /v1/ caller is refused 401, and a
// worker on an address that is not loopback does not start.
func TestNoAuth(t *testing.T) {
	a, err := newAuthenticator(context.Background(), nil, &Options{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(httptest.NewRequest("GET", "/v1/agents", nil)); !diag.Has(err, diag.Unauthenticated) {
		t.Errorf("no serve.auth: %v, want UNAUTHENTICATED", err)
	}
	_, err = newAuthenticator(context.Background(), nil, &Options{Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 8080}}, nil)
	if !diag.Has(err, diag.ServeAuthInvalid) {
		t.Errorf("no serve.auth on 10.0.0.7: %v, want SERVE_AUTH_INVALID", err)
	}
}

// TestTrustedHeaders: the X-Heddle-* headers are the caller's identity
// from a configured proxy, and refused 403 from anywhere else.
func TestTrustedHeaders(t *testing.T) {
	a, err := newTrustedHeaders(&plan.ServeAuth{Kind: "trusted_headers", Proxies: []string{"10.0.0.0/8", "192.168.1.7"}})
	if err != nil {
		t.Fatal(err)
	}
	req := func(from string) *http.Request {
		r := httptest.NewRequest("POST", "/v1/agents/a/tools/t", nil)
		r.RemoteAddr = from
		r.Header.Set("X-Heddle-Subject", "alice")
		r.Header.Set("X-Heddle-Roles", "sre, oncall")
		r.Header.Set("X-Heddle-Claim-Tenant", "acme")
		return r
	}
	for _, from := range []string{"10.1.2.3:5555", "192.168.1.7:80", "[::ffff:10.0.0.1]:1"} {
		id, err := a.Authenticate(req(from))
		if err != nil || id.Subject != "alice" || len(id.Roles) != 2 || id.Roles[1] != "oncall" || id.Claims["tenant"] != "acme" {
			t.Errorf("from %s: %+v, %v", from, id, err)
		}
	}
	for _, from := range []string{"192.168.1.8:80", "127.0.0.1:9", "[::1]:9", "garbage"} {
		if id, err := a.Authenticate(req(from)); !diag.Has(err, diag.Forbidden) || id.Subject != "" {
			t.Errorf("from %s: %+v, %v, want FORBIDDEN", from, id, err)
		}
	}
}

// TestTrustedHeadersFromElsewhere: a request from outside the proxies
// without identity headers has no credential (401); one a proxy sent with
// an identity header twice — the client's and the proxy's — is refused 403
// rather than read as either.
func TestTrustedHeadersFromElsewhere(t *testing.T) {
	a, err := newTrustedHeaders(&plan.ServeAuth{Kind: "trusted_headers", Proxies: []string{"10.0.0.0/8"}})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/v1/agents/a/tools", nil)
	r.RemoteAddr = "192.168.1.8:80"
	r.Header.Set("Authorization", "Bearer whatever")
	if _, err := a.Authenticate(r); !diag.Has(err, diag.Unauthenticated) {
		t.Errorf("from elsewhere without identity headers: %v, want UNAUTHENTICATED", err)
	}
	for _, name := range []string{"X-Heddle-Subject", "X-Heddle-Roles", "X-Heddle-Claim-Tenant"} {
		r := httptest.NewRequest("GET", "/v1/agents/a/tools", nil)
		r.RemoteAddr = "10.0.0.1:80"
		r.Header.Add(name, "mallory")
		r.Header.Add(name, "alice")
		if id, err := a.Authenticate(r); !diag.Has(err, diag.Forbidden) {
			t.Errorf("%s twice from a proxy: %+v, %v, want FORBIDDEN", name, id, err)
		}
	}
}

// TestDigest: a bearer credential's digest is its SHA-256, whatever its
// length against digest's buffer: the tokens of serve.auth.tokens are
// hashed at start-up with sha256.Sum256, and a caller's must match.
func TestDigest(t *testing.T) {
	for _, n := range []int{0, 1, 32, 255, 256, 257, 570, 4097} {
		token := strings.Repeat("k", n)
		if got, want := digest(token), sha256.Sum256([]byte(token)); got != want {
			t.Errorf("digest of %d bytes = %x, want %x", n, got, want)
		}
	}
}
