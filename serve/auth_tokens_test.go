package serve

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/secrets"
)

const (
	ciToken  = "ci-token-4f7d1c9a2b8e6f03"
	devToken = "dev-token-91ab3e77c2d04f5a"
)

// tokensAPI is a serve: section of kind tokens, its values in the
// environment variables HEDDLE_TEST_CI_TOKEN and HEDDLE_TEST_DEV_TOKEN.
const tokensAPI = `ai: {}
serve:
  auth:
    kind: tokens
    metrics: true
    tokens:
      ci: {token_ref: '${env:HEDDLE_TEST_CI_TOKEN}', subject: ci, roles: [deploy, read], claims: {tenant: acme}}
      dev: {token_ref: '${env:HEDDLE_TEST_DEV_TOKEN}', subject: dev}
`

// TestTokens: the right token calls as its identity, whatever X-Heddle-*
// headers say; a wrong or missing one is 401 UNAUTHENTICATED, with
// error="invalid_token" only for a token that was sent; /metrics needs a
// token too (serve.auth.metrics), the probes none; no answer holds a token.
func TestTokens(t *testing.T) {
	t.Setenv("HEDDLE_TEST_CI_TOKEN", ciToken)
	t.Setenv("HEDDLE_TEST_DEV_TOKEN", devToken)
	srv := front(t, tokensAPI, nil)

	got := call(t, srv, "POST", whoamiPath, "Authorization", "Bearer "+ciToken,
		"X-Heddle-Subject", "root", "X-Heddle-Roles", "admin", "X-Heddle-Claim-Tenant", "evil")
	if want := (whoami{Subject: "ci", Roles: []string{"deploy", "read"}, Claims: map[string]string{"tenant": "acme"}}); got.status != 200 || !cmp.Equal(want, got.caller) {
		t.Errorf("the ci token: %d %s, caller diff (-want +got):\n%s", got.status, got.body, cmp.Diff(want, got.caller))
	}
	if got := call(t, srv, "POST", whoamiPath, "authorization", "bearer "+devToken); got.status != 200 || got.caller.Subject != "dev" || got.caller.Roles != nil {
		t.Errorf("the dev token, scheme in lower case: %d %s", got.status, got.body)
	}

	for _, tc := range []struct {
		name    string
		headers []string
		invalid bool // error="invalid_token"
	}{
		{name: "no Authorization"},
		{name: "another scheme", headers: []string{"Authorization", "Basic " + ciToken}},
		{name: "forged identity headers alone", headers: []string{"X-Heddle-Subject", "ci", "X-Heddle-Roles", "deploy"}},
		{name: "a wrong token", headers: []string{"Authorization", "Bearer " + ciToken + "x"}, invalid: true},
		{name: "a prefix of a token", headers: []string{"Authorization", "Bearer " + ciToken[:10]}, invalid: true},
		{name: "an empty bearer", headers: []string{"Authorization", "Bearer "}, invalid: true},
		{name: "two Authorization headers", headers: []string{"Authorization", "Bearer " + ciToken, "Authorization", "Bearer " + devToken}, invalid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, srv, "POST", whoamiPath, tc.headers...)
			wantChallenge := `Bearer realm="heddle"`
			if tc.invalid {
				wantChallenge += `, error="invalid_token"`
			}
			if got.status != 401 || got.code != string(diag.Unauthenticated) || got.challenge != wantChallenge {
				t.Errorf("%d %q %s, want 401 UNAUTHENTICATED with %q", got.status, got.challenge, got.body, wantChallenge)
			}
			if strings.Contains(got.body, ciToken[:10]) || strings.Contains(got.body, devToken[:10]) {
				t.Errorf("the answer holds a token: %s", got.body)
			}
		})
	}

	if got := call(t, srv, "GET", "/metrics"); got.status != 401 || got.code != string(diag.Unauthenticated) {
		t.Errorf("/metrics without a token: %d %s", got.status, got.body)
	}
	if got := call(t, srv, "GET", "/metrics", "Authorization", "Bearer "+ciToken); got.status != 200 || strings.Contains(got.body, ciToken) {
		t.Errorf("/metrics with a token: %d", got.status)
	}
	for _, probe := range []string{"/livez", "/readyz"} {
		if got := call(t, srv, "GET", probe); got.status != 200 {
			t.Errorf("%s without a token: %d %s", probe, got.status, got.body)
		}
	}
}

// TestMetricsOpenByDefault: without serve.auth.metrics, /metrics answers
// anyone who reaches the worker, while /v1/ needs a token.
func TestMetricsOpenByDefault(t *testing.T) {
	t.Setenv("HEDDLE_TEST_CI_TOKEN", ciToken)
	t.Setenv("HEDDLE_TEST_DEV_TOKEN", devToken)
	srv := front(t, strings.Replace(tokensAPI, "    metrics: true\n", "", 1), nil)
	if got := call(t, srv, "GET", "/metrics"); got.status != 200 {
		t.Errorf("/metrics: %d %s", got.status, got.body)
	}
	if got := call(t, srv, "GET", "/v1/agents/a/tools"); got.status != 401 {
		t.Errorf("/v1/ without a token: %d %s", got.status, got.body)
	}
}

// TestTokensResolveAtStartUp: the tokens are read with Options.Secrets; a
// reference that does not resolve stops start-up with its code, and two
// tokens of one value are SERVE_AUTH_INVALID; neither message holds a value.
func TestTokensResolveAtStartUp(t *testing.T) {
	a := &plan.ServeAuth{Kind: config.ServeAuthTokens, Tokens: map[string]*plan.ServeToken{
		"ci":  {TokenRef: config.ParseRef("${secrets:/heddle/ci}"), Subject: "ci"},
		"dev": {TokenRef: config.ParseRef("${secrets:/heddle/dev}"), Subject: "dev"},
	}}
	resolver := func(values map[string]string) secrets.Resolver {
		return secrets.Func(func(_ context.Context, ref config.Ref) (secrets.Value, error) {
			if v, ok := values[ref.Name]; ok {
				return secrets.NewValue(v), nil
			}
			return secrets.Value{}, diag.New(diag.SecretUnresolved, "%s: no such file", ref)
		})
	}
	log := slog.New(slog.DiscardHandler)

	_, err := newAuthenticator(context.Background(), a, &Options{Secrets: resolver(map[string]string{"/heddle/ci": ciToken})}, log)
	if !diag.Has(err, diag.SecretUnresolved) || !strings.Contains(err.Error(), "serve.auth.tokens.dev.token_ref") {
		t.Errorf("an unresolved reference: %v, want SECRET_UNRESOLVED naming serve.auth.tokens.dev.token_ref", err)
	}
	_, err = newAuthenticator(context.Background(), a, &Options{Secrets: resolver(map[string]string{"/heddle/ci": ciToken, "/heddle/dev": ciToken})}, log)
	if !diag.Has(err, diag.ServeAuthInvalid) || strings.Contains(err.Error(), ciToken) {
		t.Errorf("two tokens of one value: %v, want SERVE_AUTH_INVALID without the value", err)
	}
	auth, err := newAuthenticator(context.Background(), a, &Options{Secrets: resolver(map[string]string{"/heddle/ci": ciToken, "/heddle/dev": devToken})}, log)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/v1/agents", nil)
	r.Header.Set("Authorization", "Bearer "+devToken)
	if id, err := auth.Authenticate(r); err != nil || !cmp.Equal(heddle.Identity{Subject: "dev"}, id) {
		t.Errorf("the dev token: %+v, %v", id, err)
	}
}

// TestTokenIdentityIsCopied: what one request's handler does to its
// caller's roles and claims does not reach the next request's caller.
func TestTokenIdentityIsCopied(t *testing.T) {
	a := &plan.ServeAuth{Kind: config.ServeAuthTokens, Tokens: map[string]*plan.ServeToken{
		"ci": {TokenRef: config.ParseRef("${env:X}"), Subject: "ci", Roles: []string{"deploy"}, Claims: map[string]string{"tenant": "acme"}},
	}}
	auth, err := newTokens(context.Background(), a, secrets.Func(func(context.Context, config.Ref) (secrets.Value, error) { return secrets.NewValue(ciToken), nil }), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/v1/agents", nil)
	r.Header.Set("Authorization", "Bearer "+ciToken)
	id, _ := auth.Authenticate(r)
	id.Roles[0], id.Claims["tenant"] = "admin", "evil"
	if id, _ := auth.Authenticate(r); id.Roles[0] != "deploy" || id.Claims["tenant"] != "acme" {
		t.Errorf("the second request's caller: %+v", id)
	}
}
