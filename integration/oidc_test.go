package integration

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/jwttest"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/serve"
	"github.com/heddlehq/heddle/usecase"
)

// caller is what the use case integration.whoami answers: who it runs as.
type caller struct {
	Subject string            `json:"subject"`
	Roles   []string          `json:"roles"`
	Claims  map[string]string `json:"claims"`
}

func init() {
	usecase.Register("integration.whoami", func(ctx context.Context, _ struct{}) (caller, error) {
		c := heddle.Caller(ctx)
		return caller{Subject: c.Subject, Roles: c.Roles, Claims: c.Claims}, nil
	}, usecase.ReadOnly(), usecase.Description("Say who the caller is."))
}

// oidcProvider is integration/oidc/server.mjs: oidc-provider, issuing JWT
// access tokens by client credentials, signing with keys the test made.
type oidcProvider struct {
	issuer string
	client *http.Client
}

// rsaKey is a signing key of the test's, with its key id.
type rsaKey struct {
	kid  string
	priv *rsa.PrivateKey
}

func newRSAKey(t *testing.T, kid string) rsaKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return rsaKey{kid: kid, priv: k}
}

// privateJWKS is keys as the provider's jwks setting: private keys, the
// first signing.
func privateJWKS(t *testing.T, keys ...rsaKey) string {
	t.Helper()
	set := jose.JSONWebKeySet{}
	for _, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.priv, KeyID: k.kid, Algorithm: "RS256", Use: "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// startOIDCProvider starts the provider, signing with keys[0].
func startOIDCProvider(t *testing.T, keys ...rsaKey) *oidcProvider {
	t.Helper()
	script := Need(t, "oidc-provider")
	addr := startNodeHTTPEnv(t, []string{"OIDC_JWKS=" + privateJWKS(t, keys...)}, script)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &oidcProvider{issuer: "http://" + addr, client: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// token obtains an access token for resource by client credentials.
func (p *oidcProvider) token(t *testing.T, client, resource, scope string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {resource}, "scope": {scope}}
	req, _ := http.NewRequest("POST", p.issuer+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, client+"-secret")
	res, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, &out); err != nil || res.StatusCode != 200 || out.AccessToken == "" {
		t.Fatalf("token for %s at %s: %d %s", client, resource, res.StatusCode, b)
	}
	return out.AccessToken
}

// rotate makes the provider sign with keys[0] from now on, and publish keys.
func (p *oidcProvider) rotate(t *testing.T, keys ...rsaKey) {
	t.Helper()
	res, err := p.client.Post(p.issuer+"/admin/rotate", "application/json", strings.NewReader(privateJWKS(t, keys...)))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 204 {
		t.Fatalf("rotate: %d", res.StatusCode)
	}
}

// jwksReads is how many times the provider's key set was read.
func (p *oidcProvider) jwksReads(t *testing.T) int {
	t.Helper()
	res, err := p.client.Get(p.issuer + "/admin/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		JWKS int `json:"jwks"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.JWKS
}

// claimsOf reads a token's claims without verifying it: the test only
// re-signs what the provider issued, changed.
func claimsOf(t *testing.T, token string) map[string]any {
	t.Helper()
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := tok.UnsafeClaimsWithoutVerification(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// resign returns claims changed by edits (nil removes a claim), signed
// with alg and key — a key the provider publishes, or not — under kid.
func resign(t *testing.T, claims map[string]any, edits map[string]any, alg jose.SignatureAlgorithm, key any, kid string) string {
	t.Helper()
	c := map[string]any{}
	for k, v := range claims {
		c[k] = v
	}
	for k, v := range edits {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return jwttest.Sign(t, alg, key, kid, "at+jwt", c)
}

// frontDoor opens a runtime with the serve: section given and agent ops,
// which grants integration.whoami, and serves its front door (serve.New,
// as heddle serve does) until the test ends.
func frontDoor(t *testing.T, serveSection string) *httptest.Server {
	t.Helper()
	p := plantest.Must(t, "ai: {}\n"+serveSection, map[string]string{"ops": "capabilities: [{kind: usecase, keys: [integration.whoami]}]\n"}, usecase.Keys()...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := runtime.Open(ctx, p, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	front, err := serve.New(ctx, rt, &serve.Options{HTTPClient: &http.Client{Transport: tr, Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(front)
	t.Cleanup(srv.Close)
	return srv
}

// invoked is one answer of the invoke API.
type invoked struct {
	status    int
	challenge string
	body      string
	code      string
	caller    caller
}

// whoami calls integration.whoami as agent ops, with the headers given
// (name, value, …).
func whoami(t *testing.T, srv *httptest.Server, headers ...string) invoked {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/agents/ops/tools/integration_whoami", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var out struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
		StructuredContent caller `json:"structuredContent"`
	}
	_ = json.Unmarshal(b, &out)
	return invoked{status: res.StatusCode, challenge: res.Header.Get("WWW-Authenticate"), body: string(b), code: out.Error.Code, caller: out.StructuredContent}
}

// forged are X-Heddle-* identity headers a client made up.
var forged = []string{"X-Heddle-Subject", "root", "X-Heddle-Roles", "admin", "X-Heddle-Claim-Tenant", "evil"}

// TestServeJWTWithOIDCProvider runs heddle serve's front door with
// serve.auth kind jwt against oidc-provider, a real, OpenID-certified
// provider: its client-credentials access tokens call as the subject,
// roles and tenant their claims map to, whatever X-Heddle-* headers say;
// a missing, expired, not-yet-valid, wrong-audience, wrong-issuer, alg
// none, HS256-with-the-public-key or unknown-kid token is 401
// UNAUTHENTICATED; made-up key ids do not make the worker read the keys
// more than once per interval; and after the provider rotates its signing
// key, its new tokens are accepted while the old key is still published.
func TestServeJWTWithOIDCProvider(t *testing.T) {
	k1 := newRSAKey(t, "k1")
	idp := startOIDCProvider(t, k1)
	const audience = "urn:heddle:invoke"
	srv := frontDoor(t, fmt.Sprintf(`serve:
  auth:
    kind: jwt
    issuer: %s
    audience: %s
    clock_skew_ms: 5000
    claims: {subject: sub, roles: groups, tenant: tenant_id}
`, idp.issuer, audience))

	opsToken := idp.token(t, "ops-bot", audience, "invoke")
	t.Run("valid", func(t *testing.T) {
		for _, tc := range []struct {
			client string
			want   caller
		}{
			{"ops-bot", caller{Subject: "ops-bot", Roles: []string{"sre", "oncall"}, Claims: map[string]string{"tenant": "acme"}}},   // groups: a list
			{"str-bot", caller{Subject: "str-bot", Roles: []string{"sre", "oncall"}, Claims: map[string]string{"tenant": "globex"}}}, // groups: a string
		} {
			got := whoami(t, srv, append([]string{"Authorization", "Bearer " + idp.token(t, tc.client, audience, "invoke")}, forged...)...)
			if got.status != 200 || !cmp.Equal(tc.want, got.caller) {
				t.Errorf("%s: %d %s; caller (-want +got):\n%s", tc.client, got.status, got.body, cmp.Diff(tc.want, got.caller))
			}
		}
	})

	if got := whoami(t, srv, forged...); got.status != 401 || got.code != string(diag.Unauthenticated) || got.challenge != `Bearer realm="heddle"` {
		t.Errorf("no token, forged headers: %d %q %s, want 401 UNAUTHENTICATED", got.status, got.challenge, got.body)
	}

	claims := claimsOf(t, opsToken)
	now := time.Now()
	stranger := newRSAKey(t, "k9")
	for _, tc := range []struct {
		name, token string
	}{
		{"expired", resign(t, claims, map[string]any{"exp": now.Add(-time.Minute).Unix()}, jose.RS256, k1.priv, k1.kid)},
		{"not yet valid", resign(t, claims, map[string]any{"nbf": now.Add(time.Minute).Unix()}, jose.RS256, k1.priv, k1.kid)},
		{"wrong audience", idp.token(t, "ops-bot", "urn:other:service", "read")},
		{"wrong issuer", resign(t, claims, map[string]any{"iss": "http://127.0.0.1:1"}, jose.RS256, k1.priv, k1.kid)},
		{"alg none", jwttest.Unsigned(t, k1.kid, "at+jwt", claims)},
		{"HS256 with the public key", jwttest.HMACWithPublicKey(t, &k1.priv.PublicKey, k1.kid, "at+jwt", claims)},
		{"unknown kid", resign(t, claims, nil, jose.RS256, stranger.priv, stranger.kid)},
		{"a published kid, another key", resign(t, claims, nil, jose.RS256, stranger.priv, k1.kid)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := whoami(t, srv, append([]string{"Authorization", "Bearer " + tc.token}, forged...)...)
			t.Log(strings.TrimSpace(got.body))
			if got.status != 401 || got.code != string(diag.Unauthenticated) || got.challenge != `Bearer realm="heddle", error="invalid_token"` {
				t.Errorf(`%d %q %s, want 401 UNAUTHENTICATED with error="invalid_token"`, got.status, got.challenge, got.body)
			}
			if strings.Contains(got.body, tc.token[len(tc.token)-16:]) {
				t.Errorf("the answer holds the token: %s", got.body)
			}
		})
	}

	t.Run("made-up key ids", func(t *testing.T) {
		before := idp.jwksReads(t)
		for i := range 20 {
			tok := resign(t, claims, nil, jose.RS256, stranger.priv, fmt.Sprintf("made-up-%d", i))
			if got := whoami(t, srv, "Authorization", "Bearer "+tok); got.status != 401 {
				t.Fatalf("made-up kid: %d %s", got.status, got.body)
			}
		}
		if n := idp.jwksReads(t) - before; n > 1 {
			t.Errorf("20 made-up key ids read the provider's keys %d times, want at most once", n)
		}
	})

	t.Run("rotation", func(t *testing.T) {
		k2 := newRSAKey(t, "k2")
		idp.rotate(t, k2, k1)
		fresh := idp.token(t, "ops-bot", audience, "invoke")
		if kid := headerKID(t, fresh); kid != "k2" {
			t.Fatalf("the provider signs with %q after the rotation, want k2", kid)
		}
		// The key set is read again when a token names a kid it does not
		// hold, at most every few seconds: the new token is accepted within
		// that interval.
		deadline := time.Now().Add(20 * time.Second)
		for {
			got := whoami(t, srv, "Authorization", "Bearer "+fresh)
			if got.status == 200 && got.caller.Subject == "ops-bot" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the token of the rotated key is still refused: %d %s", got.status, got.body)
			}
			time.Sleep(250 * time.Millisecond)
		}
		if got := whoami(t, srv, "Authorization", "Bearer "+opsToken); got.status != 200 {
			t.Errorf("a k1 token while k1 is still published: %d %s", got.status, got.body)
		}
	})
}

func headerKID(t *testing.T, token string) string {
	t.Helper()
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(tok.Headers) != 1 {
		t.Fatalf("the provider's token: %v", err)
	}
	return tok.Headers[0].KeyID
}

// TestServeForgedHeaders: X-Heddle-* identity headers are believed only
// from the proxies trusted_headers names: from anywhere else they are
// refused 403 FORBIDDEN; from a proxy they are the caller.
func TestServeForgedHeaders(t *testing.T) {
	elsewhere := frontDoor(t, "serve:\n  auth: {kind: trusted_headers, proxies: [10.0.0.0/8]}\n")
	if got := whoami(t, elsewhere, forged...); got.status != 403 || got.code != string(diag.Forbidden) {
		t.Errorf("forged headers from 127.0.0.1, proxies 10.0.0.0/8: %d %s, want 403 FORBIDDEN", got.status, got.body)
	}
	if got := whoami(t, elsewhere); got.status != 401 || got.code != string(diag.Unauthenticated) {
		t.Errorf("no headers from 127.0.0.1, proxies 10.0.0.0/8: %d %s, want 401 UNAUTHENTICATED", got.status, got.body)
	}
	proxy := frontDoor(t, "serve:\n  auth: {kind: trusted_headers, proxies: [127.0.0.1, \"::1\"]}\n")
	want := caller{Subject: "root", Roles: []string{"admin"}, Claims: map[string]string{"tenant": "evil"}}
	if got := whoami(t, proxy, forged...); got.status != 200 || !cmp.Equal(want, got.caller) {
		t.Errorf("headers from a proxy: %d %s; caller (-want +got):\n%s", got.status, got.body, cmp.Diff(want, got.caller))
	}
}
