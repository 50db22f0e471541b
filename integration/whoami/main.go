// Command whoami is the MCP server integration.TestTokenExchange calls as
// a caller: a go-sdk server over Streamable HTTP, at /mcp, that takes a
// request only with a bearer JWT its issuer's keys verify (go-oidc) for its
// own URL as audience, and offers one tool, whoami, which answers the
// token's sub and act.sub. GET /seen lists what every request to /mcp
// carried — its Authorization header and, for a POST, its JSON-RPC method —
// so that the test can check what reached the server, and what never did.
//
//	whoami --issuer http://127.0.0.1:PORT
//
// It listens on 127.0.0.1 (any free port) and prints "listening on
// http://127.0.0.1:PORT" on stdout once it does.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// seen is one request to /mcp, as GET /seen lists it.
type seen struct {
	Method        string `json:"method"`        // the HTTP method
	RPC           string `json:"rpc,omitempty"` // a POST's JSON-RPC method
	Authorization string `json:"authorization"` // as sent
	Verified      bool   `json:"verified"`      // the token was accepted
}

// identity is what whoami answers.
type identity struct {
	Sub string `json:"sub"`
	Act string `json:"act"`
}

func main() {
	issuer := flag.String("issuer", "", "the issuer whose keys verify bearer tokens")
	flag.Parse()
	if *issuer == "" {
		log.Fatal("whoami: --issuer is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	provider, err := oidc.NewProvider(dctx, *issuer)
	cancel()
	if err != nil {
		log.Fatalf("whoami: the issuer's discovery: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	verifier := provider.Verifier(&oidc.Config{ClientID: base + "/mcp", SupportedSigningAlgs: []string{"RS256"}})
	s := &server{verify: verifier}

	srv := mcp.NewServer(&mcp.Implementation{Name: "whoami", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Say who the call was made as.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.whoami)
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.authenticated(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	mux.HandleFunc("GET /seen", s.list)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	fmt.Println("listening on " + base)
	if err := hs.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

type server struct {
	verify *oidc.IDTokenVerifier

	mu   sync.Mutex
	seen []seen
}

// claims verifies an Authorization header's bearer token and returns who
// it names.
func (s *server) claims(ctx context.Context, header string) (identity, error) {
	raw, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return identity{}, fmt.Errorf("no bearer token")
	}
	tok, err := s.verify.Verify(ctx, raw)
	if err != nil {
		return identity{}, err
	}
	var c struct {
		Act struct {
			Sub string `json:"sub"`
		} `json:"act"`
	}
	if err := tok.Claims(&c); err != nil {
		return identity{}, err
	}
	return identity{Sub: tok.Subject, Act: c.Act.Sub}, nil
}

// authenticated records each request and refuses one whose token does
// not verify with a 401.
func (s *server) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := seen{Method: r.Method, Authorization: r.Header.Get("Authorization")}
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				http.Error(w, "cannot read the body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(body, &m)
			e.RPC = m.Method
		}
		_, err := s.claims(r.Context(), e.Authorization)
		e.Verified = err == nil
		s.mu.Lock()
		s.seen = append(s.seen, e)
		s.mu.Unlock()
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *server) whoami(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, identity, error) {
	id, err := s.claims(ctx, req.Extra.Header.Get("Authorization"))
	return nil, id, err
}

func (s *server) list(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.seen)
}
