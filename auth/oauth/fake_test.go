package oauth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/internal/memnet"
)

// fakeAS is an authorization server on loopback, or on an in-memory
// network for tests in a synctest bubble: RFC 8414 metadata,
// dynamic registration, an authorization endpoint that approves at once
// (302 to the redirect URI), and a token endpoint for the
// client_credentials, authorization_code (PKCE S256) and refresh_token
// grants. It counts token requests.
type fakeAS struct {
	srv *httptest.Server
	net *memnet.Network // nil: loopback; its resource servers use the same
	// Settings, fixed before the first request.
	clientID, secret string
	expiresIn        int    // seconds; 0 means none given
	echoSecrets      bool   // a misbehaving server: error bodies repeat what they were sent
	refreshToken     string // the one refresh token it accepts ("" issues new ones)

	tokenRequests atomic.Int64
	idpRequests   atomic.Int64
	grants        sync.Map // grant type -> *atomic.Int64

	mu     sync.Mutex
	n      int
	tokens map[string]time.Time // access token -> expiry
	codes  map[string]string    // code -> PKCE challenge
	basic  int                  // token requests authenticated with HTTP Basic
}

func newFakeAS(t *testing.T, clientID, secret string) *fakeAS {
	t.Helper()
	return newFakeASOn(t, nil, clientID, secret)
}

// newFakeASOn starts a fakeAS on n, or on loopback when n is nil.
func newFakeASOn(t *testing.T, n *memnet.Network, clientID, secret string) *fakeAS {
	t.Helper()
	as := &fakeAS{net: n, clientID: clientID, secret: secret, tokens: map[string]time.Time{}, codes: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{
			"issuer":                                as.srv.URL,
			"authorization_endpoint":                as.srv.URL + "/authorize",
			"token_endpoint":                        as.srv.URL + "/token",
			"registration_endpoint":                 as.srv.URL + "/register",
			"code_challenge_methods_supported":      []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
			"grant_types_supported":                 []string{"authorization_code", "client_credentials", "refresh_token", "urn:ietf:params:oauth:grant-type:jwt-bearer"},
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		m["client_id"] = as.clientID
		m["client_secret"] = as.secret
		m["token_endpoint_auth_method"] = "client_secret_basic"
		writeJSON(w, 201, m)
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
			http.Error(w, "PKCE required", 400)
			return
		}
		as.mu.Lock()
		as.n++
		code := fmt.Sprintf("code-%d", as.n)
		as.codes[code] = q.Get("code_challenge")
		as.mu.Unlock()
		u, _ := url.Parse(q.Get("redirect_uri"))
		v := u.Query()
		v.Set("code", code)
		v.Set("state", q.Get("state"))
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", as.token)
	// An identity provider for the enterprise flow, at issuer <URL>/idp with
	// no metadata of its own: RFC 8693 token exchange of an ID token for an
	// ID-JAG.
	mux.HandleFunc("POST /idp/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		as.idpRequests.Add(1)
		f := r.PostForm
		if f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" ||
			f.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token" ||
			!strings.HasPrefix(f.Get("subject_token"), "idt-") || f.Get("audience") != as.srv.URL {
			writeJSON(w, 400, map[string]any{"error": "invalid_request"})
			return
		}
		writeJSON(w, 200, map[string]any{"access_token": "jag-" + f.Get("subject_token"),
			"issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"})
	})
	as.srv = as.serve(t, mux)
	return as
}

// serve starts h on as's network, closed when the test ends.
func (as *fakeAS) serve(t *testing.T, h http.Handler) *httptest.Server {
	var srv *httptest.Server
	if as.net != nil {
		srv = as.net.Server(h)
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv
}

// transport returns a new base transport that reaches as's network, its
// idle connections closed when the test ends.
func (as *fakeAS) transport(t *testing.T) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if as.net != nil {
		tr = as.net.Transport()
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// client returns an HTTP client that reaches as's network: on memnet, what
// the strategy and the redirect fetcher must be given.
func (as *fakeAS) client(t *testing.T) *http.Client {
	return &http.Client{Transport: as.transport(t)}
}

func (as *fakeAS) token(w http.ResponseWriter, r *http.Request) {
	as.tokenRequests.Add(1)
	_ = r.ParseForm()
	grant := r.PostForm.Get("grant_type")
	c, _ := as.grants.LoadOrStore(grant, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	fail := func(code string) {
		body := map[string]any{"error": code}
		if as.echoSecrets {
			body["error_description"] = "you sent " + secret + " and " + r.PostForm.Encode()
		}
		writeJSON(w, 400, body)
	}
	if id != as.clientID || (as.secret != "" && secret != as.secret) {
		if as.echoSecrets { // no error code: golang.org/x/oauth2 quotes the whole body
			w.WriteHeader(401)
			fmt.Fprintf(w, "bad client %s:%s", id, secret)
			return
		}
		fail("invalid_client")
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if basic {
		as.basic++
	}
	switch grant {
	case "client_credentials":
	case "urn:ietf:params:oauth:grant-type:jwt-bearer":
		if !strings.HasPrefix(r.PostForm.Get("assertion"), "jag-idt-") {
			fail("invalid_grant")
			return
		}
	case "authorization_code":
		challenge, ok := as.codes[r.PostForm.Get("code")]
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
			fail("invalid_grant")
			return
		}
		delete(as.codes, r.PostForm.Get("code"))
	case "refresh_token":
		if rt := r.PostForm.Get("refresh_token"); rt == "" || (as.refreshToken != "" && rt != as.refreshToken) || (as.refreshToken == "" && !strings.HasPrefix(rt, "rt-")) {
			fail("invalid_grant")
			return
		}
	default:
		fail("unsupported_grant_type")
		return
	}
	as.n++
	tok := fmt.Sprintf("at-%d-%x", as.n, sha256.Sum256([]byte(fmt.Sprint(time.Now().UnixNano(), as.n))))[:24]
	exp := time.Now().Add(time.Hour)
	resp := map[string]any{"access_token": tok, "token_type": "Bearer"}
	if as.expiresIn > 0 {
		exp = time.Now().Add(time.Duration(as.expiresIn) * time.Second)
		resp["expires_in"] = as.expiresIn
	}
	if grant == "authorization_code" || grant == "refresh_token" {
		resp["refresh_token"] = fmt.Sprintf("rt-%d", as.n)
		if as.refreshToken != "" {
			resp["refresh_token"] = as.refreshToken
		}
	}
	as.tokens[tok] = exp
	writeJSON(w, 200, resp)
}

func (as *fakeAS) grantCount(grant string) int64 {
	c, ok := as.grants.Load(grant)
	if !ok {
		return 0
	}
	return c.(*atomic.Int64).Load()
}

// valid reports whether tok is a live token of this server.
func (as *fakeAS) valid(tok string) bool {
	as.mu.Lock()
	defer as.mu.Unlock()
	exp, ok := as.tokens[tok]
	return ok && time.Now().Before(exp)
}

// revokeAll makes every token issued so far invalid.
func (as *fakeAS) revokeAll() {
	as.mu.Lock()
	defer as.mu.Unlock()
	clear(as.tokens)
}

// fakeRS is a resource server on its fakeAS's network: an MCP server (tool
// "whoami") at /mcp and a plain JSON endpoint at /a2a, both behind bearer
// tokens of that fakeAS, with RFC 9728 metadata. It counts 401s.
type fakeRS struct {
	srv       *httptest.Server
	as        *fakeAS
	rejectAll atomic.Bool // a 401 storm: every token refused
	refusals  atomic.Int64
	served    atomic.Int64
}

func newFakeRS(t *testing.T, as *fakeAS) *fakeRS {
	t.Helper()
	rs := &fakeRS{as: as}
	server := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "says hello"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, struct{}{}, nil
		})
	mh := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": rs.srv.URL + "/mcp", "authorization_servers": []string{as.srv.URL}})
	})
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/a2a", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": rs.srv.URL + "/a2a", "authorization_servers": []string{as.srv.URL}})
	})
	mux.Handle("/mcp", rs.guard("/mcp", mh))
	mux.Handle("/a2a", rs.guard("/a2a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		writeJSON(w, 200, map[string]any{"echo": string(b)})
	})))
	rs.srv = as.serve(t, mux)
	return rs
}

func (rs *fakeRS) guard(path string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || rs.rejectAll.Load() || !rs.as.valid(tok) {
			rs.refusals.Add(1)
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource%s"`, rs.srv.URL, path))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		rs.served.Add(1)
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// logBuffer captures a logger's output at DEBUG, safely for concurrent use,
// and lets a test wait for a record.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	// onRecord, when set, sees every record's attributes.
	onRecord func(msg string, attrs map[string]string)
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(&captureHandler{b: b, h: slog.NewTextHandler(&lockedWriter{b}, &slog.HandlerOptions{Level: slog.LevelDebug})})
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type lockedWriter struct{ b *logBuffer }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	return w.b.buf.Write(p)
}

type captureHandler struct {
	b *logBuffer
	h slog.Handler
}

func (c *captureHandler) Enabled(ctx context.Context, l slog.Level) bool { return true }
func (c *captureHandler) Handle(ctx context.Context, r slog.Record) error {
	if c.b.onRecord != nil {
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		c.b.onRecord(r.Message, attrs)
	}
	return c.h.Handle(ctx, r)
}
func (c *captureHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &captureHandler{b: c.b, h: c.h.WithAttrs(as)}
}
func (c *captureHandler) WithGroup(name string) slog.Handler {
	return &captureHandler{b: c.b, h: c.h.WithGroup(name)}
}
