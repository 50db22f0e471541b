package serve

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/jwttest"
	"github.com/heddlehq/heddle/plan"
)

// testIssuer is an OpenID issuer of the test's own: a discovery document
// and a JWK set it can change, counting how often the set is read.
type testIssuer struct {
	srv   *httptest.Server
	reads atomic.Int32

	mu        sync.Mutex
	published []jose.JSONWebKey
	discovery map[string]any // nil: the issuer's own
}

func newTestIssuer(t testing.TB, keys ...jose.JSONWebKey) *testIssuer {
	t.Helper()
	iss := &testIssuer{published: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /realms/ops/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		iss.mu.Lock()
		doc := iss.discovery
		iss.mu.Unlock()
		if doc == nil {
			doc = map[string]any{"issuer": iss.url(), "jwks_uri": iss.srv.URL + "/realms/ops/certs"}
		}
		_ = json.NewEncoder(w).Encode(doc)
	})
	mux.HandleFunc("GET /realms/ops/certs", func(w http.ResponseWriter, _ *http.Request) {
		iss.reads.Add(1)
		iss.mu.Lock()
		defer iss.mu.Unlock()
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: iss.published})
	})
	mux.HandleFunc("GET /realms/ops/account", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("<html><body>Sign in</body></html>"))
	})
	iss.srv = httptest.NewServer(mux)
	t.Cleanup(iss.srv.Close)
	return iss
}

// url is the issuer, as its tokens' iss names it.
func (iss *testIssuer) url() string { return iss.srv.URL + "/realms/ops" }

func (iss *testIssuer) publish(keys ...jose.JSONWebKey) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.published = keys
}

// signingKey is a private key and its kid.
type signingKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

func newRSAKey(t testing.TB, kid string) signingKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid: kid, alg: jose.RS256, priv: k}
}

func newECKey(t *testing.T, kid string) signingKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid: kid, alg: jose.ES256, priv: k}
}

// public is the key as its issuer publishes it.
func (k signingKey) public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
}

// sign returns claims signed by k with alg (k's own when empty).
func (k signingKey) sign(t testing.TB, alg jose.SignatureAlgorithm, claims map[string]any) string {
	t.Helper()
	if alg == "" {
		alg = k.alg
	}
	return jwttest.Sign(t, alg, k.priv, k.kid, "JWT", claims)
}

// claimsOf are valid claims of iss for audience heddle, changed by edits
// (a nil value removes the claim).
func claimsOf(iss string, edits map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": iss, "aud": "heddle", "sub": "alice", "iat": now.Unix(), "nbf": now.Unix(),
		"exp": now.Add(5 * time.Minute).Unix(), "groups": []string{"sre", "oncall"}, "tenant_id": "acme"}
	for k, v := range edits {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func jwtAPI(issuer string) string {
	return fmt.Sprintf(`ai: {}
serve:
  auth:
    kind: jwt
    issuer: %s
    audience: heddle
    algorithms: [RS256, ES256]
    claims: {subject: sub, roles: groups, tenant: tenant_id}
`, issuer)
}

// TestJWT: through the front door, a token of the issuer's keys calls as
// the subject, roles and tenant its claims map to, whatever X-Heddle-*
// headers say; every token that fails a check is 401 UNAUTHENTICATED with
// error="invalid_token", naming the check (the claim or header field it
// failed on), never the token.
func TestJWT(t *testing.T) {
	rsaKey, ecKey, stranger := newRSAKey(t, "rsa-1"), newECKey(t, "ec-1"), newRSAKey(t, "rsa-1")
	iss := newTestIssuer(t, rsaKey.public(), ecKey.public())
	srv := front(t, jwtAPI(iss.url()), nil)
	now := time.Now()
	valid := func(edits map[string]any) map[string]any { return claimsOf(iss.url(), edits) }
	alice := whoami{Subject: "alice", Roles: []string{"sre", "oncall"}, Claims: map[string]string{"tenant": "acme"}}

	for _, tc := range []struct {
		name  string
		token string
		want  *whoami // nil: refused
		check string  // what the refusal names
	}{
		{name: "RS256", token: rsaKey.sign(t, "", valid(nil)), want: &alice},
		{name: "ES256", token: ecKey.sign(t, "", valid(nil)), want: &alice},
		{name: "an audience among several", token: rsaKey.sign(t, "", valid(map[string]any{"aud": []string{"other", "heddle"}})), want: &alice},
		{name: "expired within the clock skew", token: rsaKey.sign(t, "", valid(map[string]any{"exp": now.Add(-10 * time.Second).Unix()})), want: &alice},
		{name: "roles as a space-separated string", token: rsaKey.sign(t, "", valid(map[string]any{"groups": "sre oncall"})), want: &alice},
		{name: "no roles", token: rsaKey.sign(t, "", valid(map[string]any{"groups": nil, "tenant_id": nil})), want: &whoami{Subject: "alice"}},

		{name: "expired", token: rsaKey.sign(t, "", valid(map[string]any{"exp": now.Add(-time.Minute).Unix()})), check: "(exp)"},
		{name: "no exp", token: rsaKey.sign(t, "", valid(map[string]any{"exp": nil})), check: "exp"},
		{name: "not yet valid", token: rsaKey.sign(t, "", valid(map[string]any{"nbf": now.Add(5 * time.Minute).Unix()})), check: "(nbf)"},
		{name: "issued in the future", token: rsaKey.sign(t, "", valid(map[string]any{"iat": now.Add(5 * time.Minute).Unix()})), check: "(iat)"},
		{name: "another audience", token: rsaKey.sign(t, "", valid(map[string]any{"aud": "billing"})), check: "(aud)"},
		{name: "no audience", token: rsaKey.sign(t, "", valid(map[string]any{"aud": nil})), check: "(aud)"},
		{name: "another issuer", token: rsaKey.sign(t, "", valid(map[string]any{"iss": "https://idp.example.com/realms/ops"})), check: "(iss)"},
		{name: "alg none", token: jwttest.Unsigned(t, rsaKey.kid, "JWT", valid(nil)), check: "alg none"},
		{name: "HS256 with the public key", token: jwttest.HMACWithPublicKey(t, rsaKey.priv.Public(), rsaKey.kid, "JWT", valid(nil)), check: "alg HS256"},
		{name: "an algorithm not allowed", token: rsaKey.sign(t, jose.PS256, valid(nil)), check: "alg PS256"},
		{name: "a key the issuer does not publish", token: newRSAKey(t, "rsa-9").sign(t, "", valid(nil)), check: "(kid)"},
		{name: "another key under a published kid", token: stranger.sign(t, "", valid(nil)), check: "(kid)"},
		{name: "no subject", token: rsaKey.sign(t, "", valid(map[string]any{"sub": nil})), check: "serve.auth.claims.subject"},
		{name: "roles that are an object", token: rsaKey.sign(t, "", valid(map[string]any{"groups": map[string]any{"a": 1}})), check: "serve.auth.claims.roles"},
		{name: "a tenant that is a list", token: rsaKey.sign(t, "", valid(map[string]any{"tenant_id": []string{"a"}})), check: "serve.auth.claims.tenant"},
		{name: "not a JWT", token: "not-a-jwt", check: "not a JWT"},
		{name: "a JWS in JSON serialization", token: `{"payload":"e30","signatures":[]}`, check: "not a JWT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, srv, "POST", whoamiPath, "Authorization", "Bearer "+tc.token,
				"X-Heddle-Subject", "root", "X-Heddle-Roles", "admin", "X-Heddle-Claim-Tenant", "evil")
			if tc.want != nil {
				if got.status != 200 || !cmp.Equal(*tc.want, got.caller) {
					t.Errorf("%d %s; caller (-want +got):\n%s", got.status, got.body, cmp.Diff(*tc.want, got.caller))
				}
				return
			}
			if got.status != 401 || got.code != string(diag.Unauthenticated) || got.challenge != `Bearer realm="heddle", error="invalid_token"` {
				t.Errorf(`%d %q %s, want 401 UNAUTHENTICATED with error="invalid_token"`, got.status, got.challenge, got.body)
			}
			t.Log(strings.TrimSpace(got.body))
			if !strings.Contains(got.body, tc.check) {
				t.Errorf("the refusal does not name %q: %s", tc.check, got.body)
			}
			if len(tc.token) > 20 && strings.Contains(got.body, tc.token[len(tc.token)-20:]) {
				t.Errorf("the refusal holds the token: %s", got.body)
			}
		})
	}
	if got := call(t, srv, "GET", "/v1/agents/a/tools"); got.status != 401 || got.challenge != `Bearer realm="heddle"` {
		t.Errorf("no token: %d %q %s, want 401 with the bare challenge", got.status, got.challenge, got.body)
	}
	if got := call(t, srv, "GET", "/metrics"); got.status != 200 {
		t.Errorf("/metrics without serve.auth.metrics: %d", got.status)
	}
}

// clock is a time the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testJWT sets up kind jwt against iss directly, on the clock c.
func testJWT(t *testing.T, iss *testIssuer, c *clock) *jwtAuth {
	t.Helper()
	a := &plan.ServeAuth{Kind: config.ServeAuthJWT, Issuer: iss.url(), Audience: "heddle", Algorithms: []string{"RS256"},
		ClockSkewMS: 30000, Claims: map[string]string{"subject": "sub", "roles": "groups"}}
	j, err := newJWT(context.Background(), a, &Options{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if c != nil {
		j.keys.now = c.now
		j.keys.tried, j.keys.fetched = c.now(), c.now() // the read at start-up
	}
	return j
}

func bearerRequest(token string) *http.Request {
	r := httptest.NewRequest("GET", "/v1/agents/a/tools", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

// TestJWTKeyRotation: a token signed by a key published after start-up is
// accepted once the key set is read again, which a key id the cache does
// not hold triggers — at most once every keysRefetchEvery, with concurrent
// tokens waiting for one read; keys older than keysMaxAge are read again,
// so a withdrawn key stops being accepted; a key set that cannot be read
// again keeps the keys held.
func TestJWTKeyRotation(t *testing.T) {
	k1, k2, k3 := newRSAKey(t, "k1"), newRSAKey(t, "k2"), newRSAKey(t, "k3")
	iss := newTestIssuer(t, k1.public())
	c := &clock{t: time.Now()}
	j := testJWT(t, iss, c)
	claims := claimsOf(iss.url(), nil)
	accepted := func(k signingKey) error {
		_, err := j.Authenticate(bearerRequest(k.sign(t, "", claims)))
		return err
	}
	if err := accepted(k1); err != nil || iss.reads.Load() != 1 {
		t.Fatalf("k1: %v, %d reads", err, iss.reads.Load())
	}

	// k2 is published, and tokens are signed with it, right after start-up:
	// within keysRefetchEvery of the first read, the set is not read again.
	iss.publish(k2.public(), k1.public())
	if err := accepted(k2); !diag.Has(err, diag.Unauthenticated) || iss.reads.Load() != 1 {
		t.Errorf("k2 at once: %v, %d reads, want UNAUTHENTICATED and no read", err, iss.reads.Load())
	}
	c.add(keysRefetchEvery)
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() { errs[i] = accepted(k2) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Errorf("k2 after %s: %v", keysRefetchEvery, err)
		}
	}
	if n := iss.reads.Load(); n != 2 {
		t.Errorf("20 concurrent k2 tokens read the key set %d times, want once", n-1)
	}
	if err := accepted(k1); err != nil {
		t.Errorf("k1, still published: %v", err)
	}

	// A caller sending made-up key ids does not make the worker read the
	// set more often than keysRefetchEvery.
	stranger := newRSAKey(t, "made-up")
	for range 10 {
		if err := accepted(stranger); !diag.Has(err, diag.Unauthenticated) {
			t.Fatalf("an unknown kid: %v", err)
		}
	}
	c.add(keysRefetchEvery)
	for range 10 {
		_ = accepted(stranger)
	}
	if n := iss.reads.Load(); n != 3 {
		t.Errorf("unknown kids read the key set %d times over two intervals, want once", n-2)
	}

	// k1 is withdrawn; once the keys are older than keysMaxAge, they are
	// read again and k1 is refused.
	iss.publish(k3.public(), k2.public())
	if err := accepted(k1); err != nil {
		t.Errorf("k1 before the keys are stale: %v", err)
	}
	c.add(keysMaxAge)
	if err := accepted(k1); !diag.Has(err, diag.Unauthenticated) {
		t.Errorf("k1 withdrawn, keys stale: %v, want UNAUTHENTICATED", err)
	}
	if err := accepted(k3); err != nil {
		t.Errorf("k3: %v", err)
	}

	// The issuer goes away: the keys held still verify, and a new kid is
	// refused without an error of the read reaching the caller.
	iss.srv.Close()
	c.add(keysMaxAge)
	if err := accepted(k3); err != nil {
		t.Errorf("k3 with the issuer gone: %v", err)
	}
	if err := accepted(newRSAKey(t, "k4")); !diag.Has(err, diag.Unauthenticated) || strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("a new kid with the issuer gone: %v", err)
	}
}

// TestKeySetParsedToken: the key set verifies the token as verify parsed
// it, held to serve.auth.algorithms as a parse of its own is, and never
// the parse of another token than the one it is given.
func TestKeySetParsedToken(t *testing.T) {
	k := newRSAKey(t, "k1")
	iss := newTestIssuer(t, k.public())
	j := testJWT(t, iss, nil)
	claims := claimsOf(iss.url(), nil)
	parse := func(raw string) *jose.JSONWebSignature {
		jws, err := jose.ParseSignedCompact(raw, named)
		if err != nil {
			t.Fatal(err)
		}
		return jws
	}
	verify := func(raw string, sc *sigCheck) error {
		_, err := j.keys.VerifySignature(context.WithValue(context.Background(), sigCheckKey{}, sc), raw)
		if sc.verified != (err == nil) || !errors.Is(sc.err, err) {
			t.Errorf("the check holds %v, verified %t; VerifySignature returned %v", sc.err, sc.verified, err)
		}
		return err
	}
	good := k.sign(t, "", claims)
	if err := verify(good, &sigCheck{raw: good, jws: parse(good)}); err != nil {
		t.Errorf("a token and its parse: %v", err)
	}
	if err := verify(good, &sigCheck{}); err != nil {
		t.Errorf("a token without its parse: %v", err)
	}
	ps := k.sign(t, jose.PS256, claims) // RS256 alone is allowed
	if err := verify(ps, &sigCheck{raw: ps, jws: parse(ps)}); !diag.Has(err, diag.Unauthenticated) || !strings.Contains(err.Error(), "serve.auth.algorithms") {
		t.Errorf("a parse of alg PS256: %v, want UNAUTHENTICATED naming serve.auth.algorithms", err)
	}
	forged := newRSAKey(t, "k1").sign(t, "", claims)
	if err := verify(forged, &sigCheck{raw: good, jws: parse(good)}); !diag.Has(err, diag.Unauthenticated) {
		t.Errorf("a forged token beside the parse of a good one: %v, want UNAUTHENTICATED", err)
	}
}

// TestJWTClaimsMapping: the roles claim may be a list or a space-separated
// string, a dotted name is a path into nested claims unless a claim of that
// whole name exists (a namespaced claim), and numbers and booleans are
// claims as JSON writes them.
func TestJWTClaimsMapping(t *testing.T) {
	j := &jwtAuth{claims: map[string]string{"subject": "sub", "roles": "realm_access.roles", "tenant": "https://example.com/tenant",
		"level": "level", "admin": "flags.admin"}}
	raw := func(v map[string]any) map[string]json.RawMessage {
		out := map[string]json.RawMessage{}
		for k, x := range v {
			b, _ := json.Marshal(x)
			out[k] = b
		}
		return out
	}
	id, err := j.identity(raw(map[string]any{"sub": "bob", "realm_access": map[string]any{"roles": []string{"sre", "", "dev"}},
		"https://example.com/tenant": "acme", "level": 3, "flags": map[string]any{"admin": false}}))
	want := heddle.Identity{Subject: "bob", Roles: []string{"sre", "dev"}, Claims: map[string]string{"tenant": "acme", "level": "3", "admin": "false"}}
	if err != nil || !cmp.Equal(want, id) {
		t.Errorf("%v; identity (-want +got):\n%s", err, cmp.Diff(want, id))
	}
	j.claims["roles"] = "scope"
	if id, err := j.identity(raw(map[string]any{"sub": "bob", "scope": "read  write"})); err != nil || !cmp.Equal([]string{"read", "write"}, id.Roles) {
		t.Errorf("roles from scope: %+v, %v", id, err)
	}
	if _, err := j.identity(raw(map[string]any{"sub": 42})); !diag.Has(err, diag.Unauthenticated) {
		t.Errorf("a subject that is a number: %v, want UNAUTHENTICATED", err)
	}
}

// TestJWTStartUp: the issuer's keys are read before serve listens, from
// the discovery document or serve.auth.jwks_url; when they cannot be,
// start-up fails with SERVE_AUTH_UNREACHABLE saying why, naming the host
// and never the URL. An algorithm that is not asymmetric is refused by the
// verifier too, whatever the plan says.
func TestJWTStartUp(t *testing.T) {
	key := newRSAKey(t, "k1")
	iss := newTestIssuer(t, key.public())
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	log := slog.New(slog.DiscardHandler)
	open := func(a plan.ServeAuth) error {
		a.Kind, a.Audience = config.ServeAuthJWT, "heddle"
		_, err := newAuthenticator(context.Background(), &a, &Options{}, log)
		return err
	}

	if err := open(plan.ServeAuth{Issuer: iss.url(), JWKSURL: iss.srv.URL + "/realms/ops/certs"}); err != nil {
		t.Errorf("jwks_url: %v", err)
	}
	for _, tc := range []struct {
		name      string
		a         plan.ServeAuth
		discovery map[string]any
		keys      []jose.JSONWebKey
		why       string
	}{
		{name: "refused", a: plan.ServeAuth{Issuer: gone.URL + "/realms/ops"}, why: "connection refused"},
		{name: "no discovery document", a: plan.ServeAuth{Issuer: iss.srv.URL + "/realms/opz"}, why: "HTTP 404"},
		{name: "another issuer", a: plan.ServeAuth{Issuer: iss.url()}, discovery: map[string]any{"issuer": iss.url() + "/", "jwks_uri": iss.srv.URL + "/realms/ops/certs"}, why: "names the issuer"},
		{name: "no jwks_uri", a: plan.ServeAuth{Issuer: iss.url()}, discovery: map[string]any{"issuer": iss.url()}, why: "no jwks_uri"},
		{name: "a plain-http jwks_uri", a: plan.ServeAuth{Issuer: iss.url()}, discovery: map[string]any{"issuer": iss.url(), "jwks_uri": "http://idp.example.com/certs"}, why: "not https"},
		{name: "no public signing key", a: plan.ServeAuth{Issuer: iss.url()},
			keys: []jose.JSONWebKey{{Key: []byte("a symmetric key of 32 bytes....."), KeyID: "oct"}, {Key: key.priv.Public(), KeyID: "enc", Use: "enc"}}, why: "no public signing key"},
		{name: "a jwks_url that is not a key set", a: plan.ServeAuth{Issuer: iss.url(), JWKSURL: iss.url() + "/account"}, why: "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			iss.mu.Lock()
			iss.discovery = tc.discovery
			if tc.keys != nil {
				iss.published = tc.keys
			}
			iss.mu.Unlock()
			t.Cleanup(func() {
				iss.mu.Lock()
				iss.discovery, iss.published = nil, []jose.JSONWebKey{key.public()}
				iss.mu.Unlock()
			})
			err := open(tc.a)
			t.Log(err)
			if !diag.Has(err, diag.ServeAuthUnreachable) || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("%v, want SERVE_AUTH_UNREACHABLE saying %q", err, tc.why)
			}
			// The discovered issuer is named, for the operator to compare;
			// the URLs fetched never are.
			if err != nil && tc.name != "another issuer" && (strings.Contains(err.Error(), "/realms/") || strings.Contains(err.Error(), "/certs")) {
				t.Errorf("the message holds a URL: %v", err)
			}
		})
	}

	for _, alg := range []string{"HS256", "none", "RS1"} {
		if err := open(plan.ServeAuth{Issuer: iss.url(), Algorithms: []string{"RS256", alg}}); !diag.Has(err, diag.ServeAuthInvalid) {
			t.Errorf("algorithm %s: %v, want SERVE_AUTH_INVALID", alg, err)
		}
	}
}

// TestJWTLendsTheCallersToken: serve.auth kind jwt puts the token it
// verified on the request's context (heddle.WithCallerToken), for a
// server called as the caller; the other kinds have no token to lend.
func TestJWTLendsTheCallersToken(t *testing.T) {
	k := newRSAKey(t, "rsa-1")
	iss := newTestIssuer(t, k.public())
	j := testJWT(t, iss, &clock{t: time.Now()})
	tok := k.sign(t, "", claimsOf(iss.url(), nil))
	r := bearerRequest(tok)
	if _, err := j.Authenticate(r); err != nil {
		t.Fatal(err)
	}
	var a Authenticator = j
	l, ok := a.(tokenLender)
	if !ok {
		t.Fatal("serve.auth kind jwt lends no token")
	}
	if got, ok := heddle.CallerToken(l.withToken(t.Context(), r)); !ok || got != tok {
		t.Error("the verified token is not on the context")
	}
	for _, other := range []Authenticator{none{}, unset{}, &tokens{}, &trustedHeaders{}} {
		if _, ok := other.(tokenLender); ok {
			t.Errorf("%T lends a token", other)
		}
	}
}
