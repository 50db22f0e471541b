package oauth_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
)

const (
	exchangeClient = "heddle-worker"
	exchangeSecret = "worker-secret-value"
	serverURL      = "https://mcp.example/mcp"
)

// idp is a token endpoint of RFC 8693's: it exchanges any subject token
// for "x-<n>" and answers client credentials with "own-<n>", and records
// every request.
type idp struct {
	srv *httptest.Server

	mu        sync.Mutex
	exchanges map[string]int // subject token → exchanges
	owns      int
	forms     []map[string]string
	expiresIn int
	refuse    string        // an OAuth error code to answer with
	status    int           // a status to answer with instead
	delay     time.Duration // before answering an exchange
}

func newIdP(t *testing.T) *idp {
	t.Helper()
	p := &idp{exchanges: map[string]int{}, expiresIn: 3600}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *idp) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/token" || r.ParseForm() != nil {
		http.NotFound(w, r)
		return
	}
	id, secret, _ := r.BasicAuth()
	form := map[string]string{"basic_id": id, "basic_secret": secret}
	for k := range r.PostForm {
		form[k] = r.PostForm.Get(k)
	}
	p.mu.Lock()
	p.forms = append(p.forms, form)
	refuse, status, delay, exp := p.refuse, p.status, p.delay, p.expiresIn
	p.mu.Unlock()
	if id != exchangeClient || secret != exchangeSecret {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_client"}`)
		return
	}
	switch {
	case status != 0:
		w.WriteHeader(status)
		fmt.Fprint(w, "upstream trouble")
		return
	case refuse != "":
		w.WriteHeader(http.StatusBadRequest)
		// The description quotes what was sent, as some providers' do.
		fmt.Fprintf(w, `{"error":%q,"error_description":"cannot exchange %s"}`, refuse, form["subject_token"])
		return
	}
	var tok string
	switch form["grant_type"] {
	case "urn:ietf:params:oauth:grant-type:token-exchange":
		time.Sleep(delay)
		p.mu.Lock()
		p.exchanges[form["subject_token"]]++
		tok = fmt.Sprintf("x-%s-%d", strings.TrimPrefix(subjectOf(form["subject_token"]), "jwt:"), p.exchanges[form["subject_token"]])
		p.mu.Unlock()
	case "client_credentials":
		p.mu.Lock()
		p.owns++
		tok = fmt.Sprintf("own-%d", p.owns)
		p.mu.Unlock()
	default:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"unsupported_grant_type"}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": exp,
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
}

// subjectOf names a subject token in the tokens issued for it.
func subjectOf(tok string) string {
	if i := strings.IndexByte(tok, '.'); i > 0 {
		return "jwt"
	}
	return tok
}

func (p *idp) count(subject string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exchanges[subject]
}

func (p *idp) set(f func(p *idp)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// exchangeStrategy builds an oauth strategy of flow token_exchange against
// p, as the runtime does, logging to log.
func exchangeStrategy(t *testing.T, p *idp, log io.Writer, extra map[string]any) authlive.Strategy {
	t.Helper()
	ref := config.ParseRef("${env:WORKER_SECRET}")
	settings := map[string]any{"flow": "token_exchange", "client_id": exchangeClient, "client_secret_ref": &ref,
		"idp_token_endpoint": p.srv.URL + "/token"}
	for k, v := range extra {
		settings[k] = v
	}
	res := secrets.New(secrets.Options{LookupEnv: func(name string) (string, bool) {
		return exchangeSecret, name == "WORKER_SECRET"
	}})
	env := authlive.Env{Secrets: res, Name: "server whoami", Purpose: "mcp", URL: serverURL,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	s, err := authlive.Build(t.Context(), env, &plan.Auth{Kind: "oauth", Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, ok := s.(authlive.OAuthStrategy); ok {
		t.Fatal("the token_exchange flow hands go-sdk an OAuth handler")
	}
	return s
}

// asCaller is ctx carrying the caller's token, as heddle serve puts it.
func asCaller(ctx context.Context, token string) context.Context {
	return heddle.WithCallerToken(heddle.WithCaller(ctx, heddle.Identity{Subject: "someone"}), token)
}

// recorder is the server's side of the transport: it records the
// Authorization header of every request and answers 200.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.seen = append(r.seen, req.Header.Get("Authorization"))
	r.mu.Unlock()
	return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

// send sends one request to the server through s, with ctx.
func send(t *testing.T, s authlive.Strategy, rt http.RoundTripper, ctx context.Context, header string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", serverURL, strings.NewReader("{}"))
	if header != "" {
		req.Header.Set("Authorization", header)
	}
	resp, err := s.Wrap(rt).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestTokenExchangeRequests: a request made for a caller is sent with the
// token the identity provider exchanged the caller's for — the caller's
// token as subject_token of type access_token, heddle's client
// authenticating as the actor, the server's URL as resource — and a
// request no caller made with heddle's own token (client credentials, same
// resource); whatever Authorization header a request carried is replaced,
// and the caller's token never reaches the server.
func TestTokenExchangeRequests(t *testing.T) {
	p := newIdP(t)
	var log bytes.Buffer
	s := exchangeStrategy(t, p, &log, map[string]any{"scopes": []string{"read"}})
	server := &recorder{}
	const callerToken = "caller-token-ops-bot"

	send(t, s, server, asCaller(t.Context(), callerToken), "Bearer "+callerToken)
	send(t, s, server, t.Context(), "")
	send(t, s, server, asCaller(t.Context(), callerToken), "")

	want := []string{"Bearer x-" + callerToken + "-1", "Bearer own-1", "Bearer x-" + callerToken + "-1"}
	if fmt.Sprint(server.seen) != fmt.Sprint(want) {
		t.Errorf("the server saw %q, want %q", server.seen, want)
	}
	p.mu.Lock()
	forms := p.forms
	p.mu.Unlock()
	if len(forms) != 2 {
		t.Fatalf("%d token requests, want 2 (one exchange, one own token): %v", len(forms), forms)
	}
	ex, own := forms[0], forms[1]
	for k, v := range map[string]string{
		"grant_type":         "urn:ietf:params:oauth:grant-type:token-exchange",
		"subject_token":      callerToken,
		"subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
		"resource":           serverURL,
		"scope":              "read",
		"basic_id":           exchangeClient,
	} {
		if ex[k] != v {
			t.Errorf("exchange: %s = %q, want %q", k, ex[k], v)
		}
	}
	for k, v := range map[string]string{"grant_type": "client_credentials", "resource": serverURL, "scope": "read", "basic_id": exchangeClient} {
		if own[k] != v {
			t.Errorf("own token: %s = %q, want %q", k, own[k], v)
		}
	}
	if _, ok := ex["client_secret"]; ok {
		t.Error("the client secret was sent in the form, not by client_secret_basic")
	}
	for _, secret := range []string{callerToken, exchangeSecret, "x-" + callerToken, "own-1"} {
		if strings.Contains(log.String(), secret) {
			t.Errorf("the log holds a secret: %s", log.String())
		}
	}
}

// TestTokenExchangeCache: a caller's token is exchanged once for the
// calls that follow and for concurrent calls, which share one request; an
// exchanged token is used until shortly before it expires, and never past
// the caller's token's own expiry; a token the server refused (401) is
// exchanged again.
func TestTokenExchangeCache(t *testing.T) {
	p := newIdP(t)
	s := exchangeStrategy(t, p, io.Discard, nil)
	cs := s.(authlive.CallerStrategy)

	t.Run("concurrent calls share one exchange", func(t *testing.T) {
		p.set(func(p *idp) { p.delay = 100 * time.Millisecond })
		defer p.set(func(p *idp) { p.delay = 0 })
		concurrently(t, 20, func(int) error { return cs.ForCaller(asCaller(t.Context(), "tok-a")) })
		for range 3 {
			if err := cs.ForCaller(asCaller(t.Context(), "tok-a")); err != nil {
				t.Fatal(err)
			}
		}
		if n := p.count("tok-a"); n != 1 {
			t.Errorf("%d exchanges for 23 calls of one caller, want 1", n)
		}
		if err := cs.ForCaller(asCaller(t.Context(), "tok-b")); err != nil {
			t.Fatal(err)
		}
		if n := p.count("tok-b"); n != 1 {
			t.Errorf("another caller: %d exchanges, want 1", n)
		}
	})

	t.Run("not past the exchanged token's expiry", func(t *testing.T) {
		p.set(func(p *idp) { p.expiresIn = 2 }) // used for 1.5 s
		defer p.set(func(p *idp) { p.expiresIn = 3600 })
		for range 2 {
			if err := cs.ForCaller(asCaller(t.Context(), "tok-short")); err != nil {
				t.Fatal(err)
			}
		}
		if n := p.count("tok-short"); n != 1 {
			t.Fatalf("%d exchanges before expiry, want 1", n)
		}
		time.Sleep(1600 * time.Millisecond)
		if err := cs.ForCaller(asCaller(t.Context(), "tok-short")); err != nil {
			t.Fatal(err)
		}
		if n := p.count("tok-short"); n != 2 {
			t.Errorf("%d exchanges after the exchanged token's expiry, want 2", n)
		}
	})

	t.Run("not past the caller's token's expiry", func(t *testing.T) {
		exp := time.Now().Add(1500 * time.Millisecond).Unix()
		subject := unsignedJWT(t, map[string]any{"sub": "ops-bot", "exp": exp})
		for range 2 {
			if err := cs.ForCaller(asCaller(t.Context(), subject)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Until(time.Unix(exp, 0)) + 100*time.Millisecond)
		if err := cs.ForCaller(asCaller(t.Context(), subject)); err != nil {
			t.Fatal(err)
		}
		if n := p.count(subject); n != 2 {
			t.Errorf("%d exchanges, want 2: the exchanged token outlived the caller's (exp)", n)
		}
	})

	t.Run("a refused token is exchanged again", func(t *testing.T) {
		refusing := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 401, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
		})
		send(t, s, refusing, asCaller(t.Context(), "tok-c"), "")
		if err := cs.ForCaller(asCaller(t.Context(), "tok-c")); err != nil {
			t.Fatal(err)
		}
		if n := p.count("tok-c"); n != 2 {
			t.Errorf("%d exchanges, want 2 (the server refused the first token)", n)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// unsignedJWT is a JWT of claims with a signature nobody checks here: the
// front door verified the caller's token; the strategy reads its exp.
func unsignedJWT(t *testing.T, claims map[string]any) string {
	t.Helper()
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","typ":"at+jwt"}`)) + "." + enc(b) + ".c2ln"
}

// TestTokenExchangeRefusals: a call without a caller's token is refused
// (authlive.ErrNoCallerToken) with no request to the provider; a provider
// that refuses the exchange makes TOKEN_EXCHANGE_REFUSED naming the server
// and the OAuth error code, and one that fails otherwise TOOL_UNAVAILABLE;
// no error and no log line holds the caller's token, the client secret or
// the provider's description.
func TestTokenExchangeRefusals(t *testing.T) {
	p := newIdP(t)
	var log bytes.Buffer
	s := exchangeStrategy(t, p, &log, nil)
	cs := s.(authlive.CallerStrategy)
	const callerToken = "caller-secret-token-123"

	err := cs.ForCaller(heddle.WithCaller(t.Context(), heddle.Identity{Subject: "ops-bot"}))
	if !errors.Is(err, authlive.ErrNoCallerToken) {
		t.Errorf("no caller's token: %v, want ErrNoCallerToken", err)
	}
	p.set(func(p *idp) {
		if len(p.forms) != 0 {
			t.Errorf("a call without a caller's token asked the provider: %v", p.forms)
		}
	})

	for _, tt := range []struct {
		name    string
		set     func(p *idp)
		code    diag.Code
		mention string
	}{
		{"refused", func(p *idp) { p.refuse = "invalid_grant" }, diag.TokenExchangeRefused, "invalid_grant"},
		{"not allowed", func(p *idp) { p.refuse = "unauthorized_client" }, diag.TokenExchangeRefused, "unauthorized_client"},
		{"a code that is not one", func(p *idp) { p.refuse = `bad "code" here` }, diag.TokenExchangeRefused, "(not shown)"},
		{"a code that repeats the token", func(p *idp) { p.refuse = callerToken }, diag.TokenExchangeRefused, "(not shown)"},
		{"down", func(p *idp) { p.status = http.StatusServiceUnavailable }, diag.ToolUnavailable, "503"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p.set(func(p *idp) { p.refuse, p.status = "", 0; tt.set(p) })
			defer p.set(func(p *idp) { p.refuse, p.status = "", 0 })
			err := cs.ForCaller(asCaller(t.Context(), callerToken))
			if diag.CodeOf(err) != tt.code {
				t.Fatalf("code = %s, want %s (%v)", diag.CodeOf(err), tt.code, err)
			}
			msg := err.Error() + " " + diag.Reason(err)
			if !strings.Contains(msg, tt.mention) || !strings.Contains(msg, "whoami") {
				t.Errorf("%q: want it to name the server and %q", msg, tt.mention)
			}
			for _, secret := range []string{callerToken, exchangeSecret, "cannot exchange"} {
				if strings.Contains(msg, secret) {
					t.Errorf("the error holds %q: %s", secret, msg)
				}
			}
			// Refused, the request is not sent to the server either.
			req, _ := http.NewRequestWithContext(asCaller(t.Context(), callerToken), "POST", serverURL, strings.NewReader("{}"))
			server := &recorder{}
			if _, err := s.Wrap(server).RoundTrip(req); err == nil || len(server.seen) != 0 {
				t.Errorf("a refused exchange sent the request (%v, %v)", err, server.seen)
			}
		})
	}
	for _, secret := range []string{callerToken, exchangeSecret} {
		if strings.Contains(log.String(), secret) {
			t.Errorf("the log holds a secret:\n%s", log.String())
		}
	}
}

// TestTokenExchangeWaitsWithinItsContext: a caller that gives up stops
// waiting for an exchange in progress; the exchange goes on for the
// others, and Close ends it (goleak checks that nothing is left).
func TestTokenExchangeWaitsWithinItsContext(t *testing.T) {
	p := newIdP(t)
	p.delay = 300 * time.Millisecond
	s := exchangeStrategy(t, p, io.Discard, nil)
	cs := s.(authlive.CallerStrategy)
	ctx, cancel := context.WithTimeout(asCaller(t.Context(), "tok-slow"), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := cs.ForCaller(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the caller's deadline", err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("the caller waited %s past its deadline", d)
	}
	if err := cs.ForCaller(asCaller(t.Context(), "tok-slow")); err != nil {
		t.Fatal(err)
	}
	if n := p.count("tok-slow"); n != 1 {
		t.Errorf("%d exchanges, want 1: the second caller joins the first's", n)
	}
}

// TestTokenExchangeOnlyForMCP: the flow calls MCP servers as the caller;
// an A2A client of it is refused at start-up.
func TestTokenExchangeOnlyForMCP(t *testing.T) {
	ref := config.ParseRef("${env:S}")
	res := secrets.Func(func(context.Context, config.Ref) (secrets.Value, error) { return secrets.NewValue("v"), nil })
	_, err := authlive.Build(t.Context(), authlive.Env{Secrets: res, Name: "remote agent x", Purpose: "a2a", URL: "https://a2a.example"},
		&plan.Auth{Kind: "oauth", Settings: map[string]any{"flow": "token_exchange", "client_id": "x", "client_secret_ref": &ref, "idp_issuer": "https://idp.example"}})
	if diag.CodeOf(err) != diag.MCPAuthStrategyInvalid {
		t.Errorf("a2a: %v, want MCP_AUTH_STRATEGY_INVALID", err)
	}
}

// TestTokenExchangeThroughRuntime opens the strategy with the runtime,
// against a server over Streamable HTTP and over SSE: the handshake and the listing are sent
// with heddle's own token, a call made for a caller with the token the
// caller's was exchanged for (once for two calls), and a call for a caller
// without a token is refused with CALLER_TOKEN_REQUIRED before anything
// is sent; the server never sees the caller's token.
func TestTokenExchangeThroughRuntime(t *testing.T) {
	for _, transport := range []string{"http", "sse"} {
		t.Run(transport, func(t *testing.T) { testExchangeThroughRuntime(t, transport) })
	}
}

func testExchangeThroughRuntime(t *testing.T, transport string) {
	p := newIdP(t)
	var mu sync.Mutex
	var seen []string
	server := mcp.NewServer(&mcp.Implementation{Name: "whoami", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
			text := "(the transport passes no headers)" // SSE: the middleware's record says
			if req.Extra != nil && req.Extra.Header != nil {
				text = req.Extra.Header.Get("Authorization")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, struct{}{}, nil
		})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	path := "/mcp"
	if transport == "sse" {
		h, path = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil), "/sse"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	secretRef := config.ParseRef("${env:WORKER_SECRET}")
	pl := &plan.Plan{
		Version: plan.Version,
		Startup: plan.Startup{TimeoutMS: 10000, RemoteClients: "required"},
		Parts: []plan.Part{mcpkind.PlanPart(mcpkind.Servers{"who": {
			Name: "who", Transport: transport, URL: srv.URL + path, ToolPrefix: "who",
			TimeoutMS: 5000, Required: true, ProtocolVersion: "2025-11-25", MaxResultBytes: 1 << 20,
			Auth: &plan.Auth{Kind: "oauth", Settings: map[string]any{
				"flow": "token_exchange", "client_id": exchangeClient, "client_secret_ref": &secretRef,
				"idp_token_endpoint": p.srv.URL + "/token",
			}},
		}})},
		Agents: map[string]*plan.Agent{},
	}
	res := secrets.New(secrets.Options{LookupEnv: func(name string) (string, bool) {
		return exchangeSecret, name == "WORKER_SECRET"
	}})
	rt, err := runtime.Open(t.Context(), pl, runtime.Options{Secrets: res, Logger: slog.New(slog.DiscardHandler), Kinds: testkinds.Uses(mcplive.Use{Server: "who"})})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer rt.Close()
	hd, err := mcplive.NewHandle(rt, "who")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	before := len(seen)
	mu.Unlock()
	_, err = hd.Call(heddle.WithCaller(t.Context(), heddle.Identity{Subject: "ops-bot"}), "whoami", nil)
	if diag.CodeOf(err) != diag.CallerTokenRequired {
		t.Fatalf("a call without the caller's token: %v, want CALLER_TOKEN_REQUIRED", err)
	}
	mu.Lock()
	if len(seen) != before {
		t.Errorf("a refused call reached the server: %v", seen[before:])
	}
	mu.Unlock()
	const callerToken = "ops-bot-inbound-token"
	for range 2 {
		r, err := hd.Call(asCaller(t.Context(), callerToken), "whoami", nil)
		if err != nil || r.IsError {
			t.Fatalf("call: %v %v", err, r)
		}
		if got := r.Content[0].(*mcp.TextContent).Text; transport == "http" && got != "Bearer x-"+callerToken+"-1" {
			t.Errorf("the server was called with %q, want the exchanged token", got)
		}
	}
	if n := p.count(callerToken); n != 1 {
		t.Errorf("%d exchanges for two calls, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		if strings.Contains(s, callerToken) && !strings.Contains(s, "x-"+callerToken) {
			t.Errorf("the server saw the caller's own token: %q", s)
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(seen), func(s string) bool { return s != "POST Bearer x-"+callerToken+"-1" })); n < 2 {
		t.Errorf("%d requests were sent with the exchanged token, want the two calls': %q", n, seen)
	}
	if len(seen) == 0 || !strings.HasSuffix(seen[0], " Bearer own-1") {
		t.Errorf("the handshake was sent with %q, want heddle's own token", seen)
	}
}
