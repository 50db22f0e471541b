package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds and strategies, both halves

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/auth/oauth"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/internal/memnet"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testClientID = "heddle-test"
	testSecret   = "s3cret-client-value"
)

// connect opens an MCP session to rs through s the way the runtime does:
// go-sdk gets s's OAuth handler, and the HTTP client is wrapped with s.
func connect(t *testing.T, ctx context.Context, rs *fakeRS, s *oauth.Strategy) (*mcp.ClientSession, error) {
	t.Helper()
	base := rs.as.transport(t)
	tr := &mcp.StreamableClientTransport{
		Endpoint:     rs.srv.URL + "/mcp",
		HTTPClient:   &http.Client{Transport: s.Wrap(base)},
		OAuthHandler: s.OAuthHandler(),
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	sess, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		t.Cleanup(func() { _ = sess.Close() })
	}
	return sess, err
}

func newStrategy(t *testing.T, cfg oauth.Config, opts oauth.Options) *oauth.Strategy {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = (&logBuffer{}).logger()
	}
	s, err := oauth.New(cfg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func clientCredentials(name string) oauth.Config {
	return oauth.Config{Name: name, Flow: oauth.FlowClientCredentials, ClientID: testClientID, ClientSecret: secrets.NewValue(testSecret)}
}

func whoami(ctx context.Context, sess *mcp.ClientSession) error {
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		return err
	}
	if res.IsError {
		return errors.New("tool error")
	}
	return nil
}

// a2aClient is what an A2A client of rs would hold: a plain HTTP client
// wrapped with the same strategy value.
func a2aClient(t *testing.T, rs *fakeRS, s *oauth.Strategy) *http.Client {
	return &http.Client{Transport: s.Wrap(rs.as.transport(t))}
}

func post(ctx context.Context, c *http.Client, url, body string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	drainBody(resp)
	return resp.StatusCode, nil
}

func drainBody(resp *http.Response) {
	buf := make([]byte, 512)
	for {
		if _, err := resp.Body.Read(buf); err != nil {
			break
		}
	}
	_ = resp.Body.Close()
}

// TestClientCredentials: one token request, then every call succeeds, on
// the MCP session and on an A2A-style client sharing the strategy.
func TestClientCredentials(t *testing.T) {
	ctx := t.Context()
	as := newFakeAS(t, testClientID, testSecret)
	rs := newFakeRS(t, as)
	cfg := clientCredentials("server fake")
	cfg.TokenEndpointAuth = "client_secret_basic" // go-sdk would pick post
	s := newStrategy(t, cfg, oauth.Options{})
	sess, err := connect(t, ctx, rs, s)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	for range 5 {
		if err := whoami(ctx, sess); err != nil {
			t.Fatalf("call: %v", err)
		}
	}
	c := a2aClient(t, rs, s)
	for range 5 {
		if code, err := post(ctx, c, rs.srv.URL+"/a2a", `{"q":1}`); err != nil || code != 200 {
			t.Fatalf("a2a: %d %v", code, err)
		}
	}
	if n := as.tokenRequests.Load(); n != 1 {
		t.Errorf("token requests = %d, want 1", n)
	}
	if as.basic != 1 {
		t.Errorf("token_endpoint_auth client_secret_basic: %d token requests used Basic, want 1", as.basic)
	}
}

// TestClientCredentialsThroughRuntime builds the strategy from an auth
// block's settings, as a plan records them, and opens it with the runtime.
func TestClientCredentialsThroughRuntime(t *testing.T) {
	as := newFakeAS(t, testClientID, testSecret)
	rs := newFakeRS(t, as)
	secretRef := config.ParseRef("${env:HEDDLE_TEST_CLIENT_SECRET}")
	p := &plan.Plan{
		Version: plan.Version,
		Startup: plan.Startup{TimeoutMS: 10000, RemoteClients: "required"},
		Parts: []plan.Part{mcpkind.PlanPart(mcpkind.Servers{"fake": {
			Name: "fake", Transport: "http", URL: rs.srv.URL + "/mcp", ToolPrefix: "fake",
			TimeoutMS: 5000, Required: true, ProtocolVersion: "2025-11-25", MaxResultBytes: 1 << 20,
			Auth: &plan.Auth{Kind: "oauth", Settings: map[string]any{
				"flow": "client_credentials", "client_id": testClientID, "client_secret_ref": &secretRef,
				"token_endpoint_auth": "client_secret_post",
			}},
		}})},
		Agents: map[string]*plan.Agent{},
	}
	logs := &logBuffer{}
	res := secrets.New(secrets.Options{LookupEnv: func(name string) (string, bool) {
		return testSecret, name == "HEDDLE_TEST_CLIENT_SECRET"
	}})
	rt, err := runtime.Open(t.Context(), p, runtime.Options{Secrets: res, Logger: logs.logger(), Kinds: testkinds.Uses(mcplive.Use{Server: "fake"})})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer rt.Close()
	h, err := mcplive.NewHandle(rt, "fake")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if res, err := h.Call(t.Context(), "whoami", nil); err != nil || res.IsError {
			t.Fatalf("call: %v", err)
		}
	}
	if n := as.tokenRequests.Load(); n != 1 {
		t.Errorf("token requests = %d, want 1", n)
	}
	if as.basic != 0 {
		t.Errorf("token_endpoint_auth client_secret_post: %d requests used Basic", as.basic)
	}
	if strings.Contains(logs.String(), testSecret) {
		t.Errorf("the client secret is in the log:\n%s", logs.String())
	}
}

// TestRenewAheadOfExpiry: a token close to expiry is renewed before it is
// used, once for many concurrent callers, with no 401 — and not sooner
// than 10 s ahead. It runs in a synctest bubble on an in-memory network:
// the token's lifetime passes on the bubble's clock, at once.
func TestRenewAheadOfExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		start := time.Now()
		as := newFakeASOn(t, memnet.New(), testClientID, testSecret)
		as.expiresIn = 12 // renewed 10 s ahead: due 2 s after it was issued
		rs := newFakeRS(t, as)
		s := newStrategy(t, clientCredentials("server fake"), oauth.Options{HTTPClient: as.client(t)})
		sess, err := connect(t, ctx, rs, s)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		c := a2aClient(t, rs, s)
		if code, err := post(ctx, c, rs.srv.URL+"/a2a", "x"); err != nil || code != 200 {
			t.Fatalf("a2a: %d %v", code, err)
		}
		issued := time.Now() // the token was issued between start and now
		refusals := rs.refusals.Load()
		both := func(i int) error {
			if i%2 == 0 {
				return whoami(ctx, sess)
			}
			if code, err := post(ctx, c, rs.srv.URL+"/a2a", "x"); err != nil || code != 200 {
				return errors.New("a2a call failed")
			}
			return nil
		}

		// Until 2 s after it was issued (at or after start), the token is
		// used as it is.
		time.Sleep(time.Until(start.Add(2 * time.Second)))
		concurrently(t, 4, both)
		if n := as.tokenRequests.Load(); n != 1 {
			t.Errorf("token requests = %d at most 2 s after the token was issued, want 1 (renewed only 10 s ahead)", n)
		}

		// Past that, the next callers renew it, once.
		time.Sleep(time.Until(issued.Add(2*time.Second)) + time.Millisecond)
		concurrently(t, 20, both)
		if n := as.tokenRequests.Load(); n != 2 {
			t.Errorf("token requests = %d, want 2 (one, then one renewal)", n)
		}
		if got := rs.refusals.Load() - refusals; got != 0 {
			t.Errorf("%d requests were refused after the renewal was due, want 0", got)
		}
	})
}

// TestRenewAfter401: a revoked token is replaced after the 401 it earns,
// once for many concurrent callers.
func TestRenewAfter401(t *testing.T) {
	ctx := t.Context()
	as := newFakeAS(t, testClientID, testSecret)
	rs := newFakeRS(t, as)
	s := newStrategy(t, clientCredentials("server fake"), oauth.Options{})
	sess, err := connect(t, ctx, rs, s)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	c := a2aClient(t, rs, s)
	if err := whoami(ctx, sess); err != nil {
		t.Fatal(err)
	}
	as.revokeAll()
	concurrently(t, 20, func(i int) error {
		if i%2 == 0 {
			return whoami(ctx, sess)
		}
		if code, err := post(ctx, c, rs.srv.URL+"/a2a", "x"); err != nil || code != 200 {
			return errors.New("a2a call failed")
		}
		return nil
	})
	if n := as.tokenRequests.Load(); n != 2 {
		t.Errorf("token requests = %d, want 2 (one, then one after the revocation)", n)
	}
}

// Test401Storm: a server that refuses every token costs one authorization
// and one retry per request that meets it, never a loop.
func Test401Storm(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	as := newFakeAS(t, testClientID, testSecret)
	rs := newFakeRS(t, as)
	rs.rejectAll.Store(true)
	s := newStrategy(t, clientCredentials("server fake"), oauth.Options{})
	if _, err := connect(t, ctx, rs, s); err == nil {
		t.Fatal("connect succeeded against a server that refuses every token")
	}
	if n := as.tokenRequests.Load(); n != 1 {
		t.Errorf("connect: token requests = %d, want 1", n)
	}
	if n := rs.refusals.Load(); n != 2 {
		t.Errorf("connect: %d requests refused, want 2 (the request and its one retry)", n)
	}
	c := a2aClient(t, rs, s)
	before := rs.refusals.Load()
	concurrently(t, 10, func(int) error {
		code, err := post(ctx, c, rs.srv.URL+"/a2a", "x")
		if err == nil && code != http.StatusUnauthorized {
			return errors.New("want 401")
		}
		return nil
	})
	if n := as.tokenRequests.Load(); n > 2 {
		t.Errorf("10 concurrent refused callers made %d more token requests, want at most 1", n-1)
	}
	if n := rs.refusals.Load() - before; n > 20 {
		t.Errorf("10 callers sent %d requests, want at most 2 each", n)
	}
	if ctx.Err() != nil {
		t.Fatal("the storm did not end in time")
	}
}

// TestSecretsNotShown: neither the client secret nor any token appears in
// an error or in the log (DEBUG), even from a server that echoes them.
func TestSecretsNotShown(t *testing.T) {
	ctx := t.Context()
	as := newFakeAS(t, testClientID, "the-right-secret")
	as.echoSecrets = true
	rs := newFakeRS(t, as)
	logs := &logBuffer{}
	s := newStrategy(t, clientCredentials("server fake"), oauth.Options{Logger: logs.logger()})
	_, err := connect(t, ctx, rs, s)
	if err == nil {
		t.Fatal("connect succeeded with a wrong secret")
	}
	for _, text := range []string{err.Error(), logs.String()} {
		if strings.Contains(text, testSecret) {
			t.Errorf("the client secret is shown: %s", text)
		}
	}
	if !strings.Contains(logs.String(), "authorization failed") {
		t.Errorf("the failure is not logged at DEBUG:\n%s", logs.String())
	}
	c := a2aClient(t, rs, newStrategy(t, clientCredentials("agent fake"), oauth.Options{Logger: logs.logger()}))
	_, err = post(ctx, c, rs.srv.URL+"/a2a", "x")
	if err == nil || strings.Contains(err.Error(), testSecret) || strings.Contains(logs.String(), testSecret) {
		t.Errorf("a2a: err = %v, want an error without the secret", err)
	}

	// A good secret: tokens are never logged either.
	as2 := newFakeAS(t, testClientID, testSecret)
	rs2 := newFakeRS(t, as2)
	logs2 := &logBuffer{}
	s2 := newStrategy(t, clientCredentials("server fake"), oauth.Options{Logger: logs2.logger()})
	sess, err := connect(t, ctx, rs2, s2)
	if err != nil {
		t.Fatal(err)
	}
	if err := whoami(ctx, sess); err != nil {
		t.Fatal(err)
	}
	as2.mu.Lock()
	var tokens []string
	for tok := range as2.tokens {
		tokens = append(tokens, tok)
	}
	as2.mu.Unlock()
	for _, tok := range append(tokens, testSecret) {
		if strings.Contains(logs2.String(), tok) {
			t.Errorf("a secret (%.6s…) is in the log", tok)
		}
	}
}

// TestAuthorizationCode: dynamic registration, PKCE, the code read from
// the redirect, then renewal with the refresh token once the access token
// is 10 s from expiry, not before. It runs in a synctest bubble on an
// in-memory network, so the wait for the renewal takes no time.
func TestAuthorizationCode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		start := time.Now()
		as := newFakeASOn(t, memnet.New(), "dcr-client", "dcr-secret")
		as.expiresIn = 12 // renewed 10 s ahead: due 2 s after it was issued
		rs := newFakeRS(t, as)
		s := newStrategy(t, oauth.Config{Name: "server fake", RedirectURL: "http://127.0.0.1:9/callback"},
			oauth.Options{HTTPClient: as.client(t), Fetcher: oauth.RedirectFetcher(as.client(t))})
		sess, err := connect(t, ctx, rs, s)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if err := whoami(ctx, sess); err != nil {
			t.Fatal(err)
		}
		issued := time.Now() // the token was issued between start and now

		time.Sleep(time.Until(start.Add(2 * time.Second)))
		if err := whoami(ctx, sess); err != nil {
			t.Fatal(err)
		}
		if n := as.grantCount("refresh_token"); n != 0 {
			t.Errorf("refresh_token grants = %d at most 2 s after the token was issued, want 0 (renewed only 10 s ahead)", n)
		}

		time.Sleep(time.Until(issued.Add(2*time.Second)) + time.Millisecond)
		concurrently(t, 10, func(int) error { return whoami(ctx, sess) })
		if n := as.grantCount("authorization_code"); n != 1 {
			t.Errorf("authorization_code grants = %d, want 1", n)
		}
		if n := as.grantCount("refresh_token"); n != 1 {
			t.Errorf("refresh_token grants = %d, want 1", n)
		}
	})
}

// TestRefreshTokenRef: a pre-provisioned refresh token, and no way to get
// an authorization code, is all a headless deployment needs.
func TestRefreshTokenRef(t *testing.T) {
	ctx := t.Context()
	as := newFakeAS(t, testClientID, testSecret)
	as.refreshToken = "pre-provisioned-refresh-token"
	rs := newFakeRS(t, as)
	cfg := oauth.Config{Name: "server fake", ClientID: testClientID, ClientSecret: secrets.NewValue(testSecret), RefreshToken: secrets.NewValue(as.refreshToken)}
	s := newStrategy(t, cfg, oauth.Options{})
	sess, err := connect(t, ctx, rs, s)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if err := whoami(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if n := as.tokenRequests.Load(); n != 1 {
		t.Errorf("token requests = %d, want 1", n)
	}

	// A rejected refresh token says what to do, and shows no token.
	cfg.RefreshToken = secrets.NewValue("revoked-refresh-token")
	logs := &logBuffer{}
	s2 := newStrategy(t, cfg, oauth.Options{Logger: logs.logger()})
	_, err = connect(t, ctx, rs, s2)
	if err == nil || !strings.Contains(err.Error(), "refresh_token_ref") {
		t.Fatalf("connect: err = %v, want one that names refresh_token_ref", err)
	}
	for _, text := range []string{err.Error(), logs.String()} {
		if strings.Contains(text, "revoked-refresh-token") || strings.Contains(text, testSecret) {
			t.Errorf("a secret is shown: %s", text)
		}
	}
}

// TestRedirectListener: the headless authorization code flow. heddle
// listens at redirect_url and logs the URL to open; "the operator" (this
// test) opens it, the authorization server redirects to the listener, and
// the call goes through.
func TestRedirectListener(t *testing.T) {
	ctx := t.Context()
	as := newFakeAS(t, testClientID, testSecret)
	rs := newFakeRS(t, as)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	redirect := "http://" + ln.Addr().String() + "/callback"
	ln.Close()

	logs := &logBuffer{}
	var opened sync.WaitGroup
	logs.onRecord = func(msg string, attrs map[string]string) {
		if u := attrs["url"]; u != "" && strings.Contains(msg, "open this URL") {
			opened.Go(func() {
				resp, err := http.Get(u) // follows the redirect to heddle's listener
				if err != nil {
					t.Errorf("operator: %v", err)
					return
				}
				drainBody(resp)
				if resp.StatusCode != 200 {
					t.Errorf("operator: the listener answered %d", resp.StatusCode)
				}
			})
		}
	}
	s := newStrategy(t, oauth.Config{Name: "server fake", ClientID: testClientID, ClientSecret: secrets.NewValue(testSecret), RedirectURL: redirect},
		oauth.Options{Logger: logs.logger()})
	sess, err := connect(t, ctx, rs, s)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if err := whoami(ctx, sess); err != nil {
		t.Fatal(err)
	}
	opened.Wait()
	if n := as.grantCount("authorization_code"); n != 1 {
		t.Errorf("authorization_code grants = %d, want 1", n)
	}
	if !strings.Contains(logs.String(), "level=INFO") {
		t.Errorf("the URL to open is not logged at INFO:\n%s", logs.String())
	}
}

// TestEnterprise: the SEP-990 flow against an identity provider that
// publishes no metadata (idp_token_endpoint), with the client
// authenticating by HTTP Basic at the server's authorization server (go-sdk
// would send the secret in the body). A revoked token leads to a new ID
// token being read and exchanged.
func TestEnterprise(t *testing.T) {
	ctx := t.Context()
	as := newFakeAS(t, testClientID, testSecret)
	rs := newFakeRS(t, as)
	var idTokens atomic.Int64
	cfg := oauth.Config{
		Name: "server fake", Flow: oauth.FlowEnterprise, ClientID: testClientID, ClientSecret: secrets.NewValue(testSecret),
		TokenEndpointAuth: "client_secret_basic",
		IdPIssuer:         as.srv.URL + "/idp", IdPTokenEndpoint: as.srv.URL + "/idp/token", IdPClientID: "heddle-at-idp",
		IDToken: func(context.Context) (secrets.Value, error) {
			return secrets.NewValue(fmt.Sprintf("idt-%d", idTokens.Add(1))), nil
		},
	}
	s := newStrategy(t, cfg, oauth.Options{})
	sess, err := connect(t, ctx, rs, s)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if err := whoami(ctx, sess); err != nil {
		t.Fatal(err)
	}
	as.revokeAll()
	if err := whoami(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if n := as.grantCount("urn:ietf:params:oauth:grant-type:jwt-bearer"); n != 2 || as.basic != 2 {
		t.Errorf("JWT bearer grants = %d (%d with Basic), want 2 (2)", n, as.basic)
	}
	if n, m := idTokens.Load(), as.idpRequests.Load(); n != 2 || m != 2 {
		t.Errorf("ID tokens read %d, exchanged %d; want 2 and 2", n, m)
	}
}

// TestBuildErrors: settings that cannot work fail at start-up with
// MCP_AUTH_STRATEGY_INVALID (or the secret's own code), naming the setting.
func TestBuildErrors(t *testing.T) {
	ref := func(s string) *config.Ref { r := config.ParseRef(s); return &r }
	res := secrets.Func(func(_ context.Context, r config.Ref) (secrets.Value, error) {
		if r.Name == "MISSING" {
			return secrets.Value{}, diag.New(diag.SecretUnresolved, "%s: not set", r)
		}
		return secrets.NewValue("value-" + r.Name), nil
	})
	tests := []struct {
		name     string
		settings map[string]any
		code     diag.Code
		mention  string
	}{
		{"no way to get a code", map[string]any{}, diag.MCPAuthStrategyInvalid, "redirect_url"},
		{"redirect not loopback", map[string]any{"redirect_url": "https://example.com/cb"}, diag.MCPAuthStrategyInvalid, "redirect_url"},
		{"redirect without port", map[string]any{"redirect_url": "http://127.0.0.1/cb"}, diag.MCPAuthStrategyInvalid, "port"},
		{"client credentials without secret", map[string]any{"flow": "client_credentials", "client_id": "x"}, diag.MCPAuthStrategyInvalid, "client_secret_ref"},
		{"client credentials with scopes", map[string]any{"flow": "client_credentials", "client_id": "x", "client_secret_ref": ref("${env:S}"), "scopes": []string{"a"}}, diag.MCPAuthStrategyInvalid, "scopes"},
		{"enterprise without idp", map[string]any{"flow": "enterprise", "client_id": "x"}, diag.MCPAuthStrategyInvalid, "idp_issuer"},
		{"refresh without client", map[string]any{"refresh_token_ref": ref("${env:RT}")}, diag.MCPAuthStrategyInvalid, "client_id"},
		{"both client ids", map[string]any{"client_id": "x", "client_id_ref": ref("${env:ID}"), "redirect_url": "http://127.0.0.1:8765/cb"}, diag.MCPAuthStrategyInvalid, "client_id_ref"},
		{"missing secret", map[string]any{"flow": "client_credentials", "client_id": "x", "client_secret_ref": ref("${env:MISSING}")}, diag.SecretUnresolved, "MISSING"},
		{"exchange without client", map[string]any{"flow": "token_exchange", "idp_issuer": "https://idp.example"}, diag.MCPAuthStrategyInvalid, "client_secret_ref"},
		{"exchange without idp", map[string]any{"flow": "token_exchange", "client_id": "x", "client_secret_ref": ref("${env:S}")}, diag.MCPAuthStrategyInvalid, "idp_issuer"},
		{"exchange over plain http", map[string]any{"flow": "token_exchange", "client_id": "x", "client_secret_ref": ref("${env:S}"), "idp_issuer": "http://idp.example"}, diag.MCPAuthStrategyInvalid, "idp_issuer"},
		{"exchange with a relative resource", map[string]any{"flow": "token_exchange", "client_id": "x", "client_secret_ref": ref("${env:S}"), "idp_issuer": "https://idp.example", "resource": "mcp/x"}, diag.MCPAuthStrategyInvalid, "resource"},
		{"exchange with the enterprise flow's client", map[string]any{"flow": "token_exchange", "client_id": "x", "client_secret_ref": ref("${env:S}"), "idp_issuer": "https://idp.example", "idp_client_id": "y"}, diag.MCPAuthStrategyInvalid, "idp_client_id"},
		{"resource in another flow", map[string]any{"flow": "client_credentials", "client_id": "x", "client_secret_ref": ref("${env:S}"), "resource": "https://mcp.example"}, diag.MCPAuthStrategyInvalid, "resource"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := authlive.Build(t.Context(), authlive.Env{Secrets: res, Name: "server x", Purpose: "mcp"}, &plan.Auth{Kind: "oauth", Settings: tt.settings})
			if err == nil {
				_ = s.Close()
				t.Fatal("built")
			}
			t.Log(err)
			if diag.CodeOf(err) != tt.code {
				t.Errorf("code = %s, want %s (%v)", diag.CodeOf(err), tt.code, err)
			}
			if msg := err.Error() + " " + diag.Reason(err); !strings.Contains(msg, tt.mention) || strings.Contains(msg, "value-") {
				t.Errorf("error %q: want it to mention %q and no secret value", msg, tt.mention)
			}
		})
	}
}

func concurrently(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}
