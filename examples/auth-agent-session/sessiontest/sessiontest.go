// Package sessiontest is a test fixture for the agent-session strategy: one
// loopback HTTP server with a session endpoint that exchanges a bootstrap
// secret for short-lived tokens, and an MCP server (heddle's test server,
// internal/testmcp) that accepts only a live token.
//
//	srv := sessiontest.Start(sessiontest.Options{
//		TTL:     2 * time.Second,
//		Secrets: map[string]string{"/agents/test": bootstrap},
//	})
//	defer srv.Close()
//	// POST srv.SessionURL() {"secret_path": "/agents/test", "secret": bootstrap}
//	//   → {"access_token": "…", "expires_in": 2}
//	// srv.MCPURL(): Streamable HTTP, 401 without a live bearer token
//
// Counters let tests assert how many tokens were minted and how many
// requests were refused; RevokeAll makes every token refused from then on
// (a 401 storm).
package sessiontest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/heddlehq/heddle/internal/testmcp"
)

// SessionPath is where the session endpoint is served.
const SessionPath = "/auth/agent/session"

// Options configure a Server.
type Options struct {
	// TTL is each token's lifetime. Default one minute.
	TTL time.Duration
	// Secrets maps each accepted secret_path to its bootstrap secret. A
	// request naming an unknown path, or the wrong secret, gets 401.
	Secrets map[string]string
	// MCP configures the MCP server. nil means testmcp's defaults.
	MCP *testmcp.Options
	// RecordHeader names a header whose number of values is recorded for
	// every MCP request (see HeaderCounts).
	RecordHeader string
	// Resource is served behind the token check in place of the MCP
	// server: a remote agent, say. nil means the MCP server.
	Resource http.Handler
}

// Server is a running fixture. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL, http://127.0.0.1:PORT.
	URL string

	opts Options
	ts   *httptest.Server

	mu       sync.Mutex
	tokens   map[string]time.Time // token → expiry
	issued   []string
	mints    int
	denied   int
	refused  int
	accepted int
	counts   []int
	down     bool
}

// Start starts a Server on 127.0.0.1.
func Start(opts Options) *Server {
	if opts.TTL <= 0 {
		opts.TTL = time.Minute
	}
	s := &Server{opts: opts, tokens: map[string]time.Time{}}
	mux := http.NewServeMux()
	mux.HandleFunc(SessionPath, s.session)
	resource := opts.Resource
	if resource == nil {
		resource = testmcp.Handler(opts.MCP)
	}
	mux.Handle("/", s.requireToken(resource))
	s.ts = httptest.NewServer(mux)
	s.URL = s.ts.URL
	return s
}

// Close shuts the server down.
func (s *Server) Close() {
	s.ts.CloseClientConnections()
	s.ts.Close()
}

// SessionURL is the session endpoint.
func (s *Server) SessionURL() string { return s.URL + SessionPath }

// MCPURL is the MCP server's Streamable HTTP endpoint.
func (s *Server) MCPURL() string { return s.URL + testmcp.StreamablePath }

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var in struct {
		SecretPath string `json:"secret_path"`
		Secret     string `json:"secret"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&in); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	if s.down {
		s.mu.Unlock()
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	want, ok := s.opts.Secrets[in.SecretPath]
	if !ok || in.Secret == "" || in.Secret != want {
		s.denied++
		s.mu.Unlock()
		http.Error(w, "denied", http.StatusUnauthorized)
		return
	}
	tok := newToken()
	s.tokens[tok] = time.Now().Add(s.opts.TTL)
	s.issued = append(s.issued, tok)
	s.mints++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "expires_in": s.opts.TTL.Seconds()})
}

func newToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "ast_" + hex.EncodeToString(b)
}

// requireToken lets through requests carrying a live token, and answers
// 401 otherwise.
func (s *Server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		if s.opts.RecordHeader != "" {
			s.counts = append(s.counts, len(r.Header.Values(s.opts.RecordHeader)))
		}
		exp, ok := s.tokens[tok]
		live := ok && time.Now().Before(exp) && len(r.Header.Values("Authorization")) == 1
		if live {
			s.accepted++
		} else {
			s.refused++
		}
		s.mu.Unlock()
		if !live {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "invalid or expired token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Mints is how many tokens the session endpoint issued.
func (s *Server) Mints() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mints
}

// Denied is how many session requests were refused (wrong secret).
func (s *Server) Denied() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.denied
}

// Refused is how many MCP requests were answered 401.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Accepted is how many MCP requests carried a live token.
func (s *Server) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// Issued returns every token issued so far (for canary checks).
func (s *Server) Issued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.issued...)
}

// HeaderCounts returns, for each MCP request so far, how many values of
// Options.RecordHeader it carried.
func (s *Server) HeaderCounts() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.counts...)
}

// RevokeAll makes every token issued so far refused.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
}

// SetDown makes the session endpoint answer 503 (true) or work again.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}
