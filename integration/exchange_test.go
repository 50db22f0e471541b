package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/modtest"
)

// seenRequest is one request the whoami server was sent (GET /seen).
type seenRequest struct {
	Method        string `json:"method"`
	RPC           string `json:"rpc"`
	Authorization string `json:"authorization"`
	Verified      bool   `json:"verified"`
}

// TestTokenExchange runs the path users run for calls made as the caller:
// heddle serve (the binary) with serve.auth kind jwt against oidc-provider,
// and an agent granting an MCP server — integration/whoami, a process of
// its own that verifies bearer tokens with the provider's keys — whose
// auth is {kind: oauth, flow: token_exchange}. A caller with a token of the
// provider's (client credentials as ops-bot, for urn:heddle:invoke) calls
// the invoke API; the provider exchanges it (RFC 8693, a grant registered
// in integration/oidc/server.mjs) for heddle's client heddle-worker:
//
//   - the server sees the caller's subject, ops-bot, with act heddle-worker;
//   - so does a call through the MCP facade (/mcp/ops), at 2026-07-28
//     and in a 2025-11-25 session;
//   - the exchanged token is reused for the calls that follow: one
//     exchange for four calls;
//   - the handshake and listings carry heddle's own token (client
//     credentials as heddle-worker, no act);
//   - the caller's inbound token never reaches the server;
//   - a caller without a token (heddle call) is refused with
//     CALLER_TOKEN_REQUIRED, and no tools/call reaches the server.
func TestTokenExchange(t *testing.T) {
	idp := startOIDCProvider(t, newRSAKey(t, "k1"))
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections) // the clients below use it
	root := modtest.Root(t)
	bin := t.TempDir()
	heddleBin, whoamiBin := filepath.Join(bin, "heddle"), filepath.Join(bin, "whoami")
	for out, pkg := range map[string]string{heddleBin: "./cmd/heddle", whoamiBin: "./integration/whoami"} {
		build := exec.Command("go", "build", "-o", out, pkg)
		build.Dir = root
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", pkg, err, b)
		}
	}
	who := startWhoami(t, whoamiBin, idp.issuer)

	dir := t.TempDir()
	secret := filepath.Join(dir, "worker-secret")
	if err := os.WriteFile(secret, []byte("heddle-worker-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	modtest.WriteFile(t, filepath.Join(dir, "config/api.yaml"), `
ai:
  mcp_servers:
    who:
      url: `+who+`/mcp
      auth:
        kind: oauth
        flow: token_exchange
        idp_issuer: `+idp.issuer+`
        client_id: heddle-worker
        client_secret_ref: ${file:`+secret+`}
serve:
  auth: {kind: jwt, issuer: `+idp.issuer+`, audience: "urn:heddle:invoke"}
`)
	modtest.WriteFile(t, filepath.Join(dir, "agents/ops/agent.yaml"), "capabilities: [{kind: mcp, server: who}]\n")
	base := startHeddleServe(t, heddleBin, dir)

	inbound := idp.token(t, "ops-bot", "urn:heddle:invoke", "invoke")
	var tool string
	for range 2 {
		var r exchangeAnswer
		r, tool = callAsCaller(t, base, inbound, tool)
		if r.status != http.StatusOK || r.IsError || r.Structured.Sub != "ops-bot" || r.Structured.Act != "heddle-worker" {
			t.Fatalf("as ops-bot: %d %s: want the server to see sub ops-bot, act heddle-worker", r.status, r.body)
		}
	}

	// Through the MCP facade, at 2026-07-28 and in a 2025-11-25 session.
	for _, version := range []string{"", "2025-11-25"} {
		r := facadeWhoami(t, base, inbound, version)
		b, _ := json.Marshal(r.StructuredContent)
		if r.IsError || string(b) != `{"act":"heddle-worker","sub":"ops-bot"}` {
			t.Errorf("/mcp/ops (protocol %q): %s: want the server to see sub ops-bot, act heddle-worker", version, b)
		}
	}
	// A caller heddle holds no token of: heddle call.
	before := callsSeen(whoSeen(t, who))
	call := exec.Command(heddleBin, "call", "ops", tool, "--args", "{}", "--format", "json")
	call.Dir = dir
	out, err := call.CombinedOutput()
	if err == nil || !strings.Contains(string(out), string(diag.CallerTokenRequired)) {
		t.Errorf("heddle call: %v\n%s\nwant a refusal with CALLER_TOKEN_REQUIRED", err, out)
	}

	seen := whoSeen(t, who)
	if after := callsSeen(seen); after != before {
		t.Errorf("%d tools/call reached the server from a caller without a token", after-before)
	}
	var calls []seenRequest
	for _, s := range seen {
		if strings.Contains(s.Authorization, inbound) {
			t.Errorf("the server was sent the caller's own token (%s %s)", s.Method, s.RPC)
		}
		t.Logf("the server was sent %s %s", s.Method, s.RPC)
		if !s.Verified {
			t.Errorf("the server was sent a token it does not accept: %s %s", s.Method, s.RPC)
		}
		if s.RPC == "tools/call" {
			calls = append(calls, s)
			continue
		}
		if c := jwtClaims(t, s.Authorization); c["sub"] != "heddle-worker" || c["act"] != nil {
			t.Errorf("%s %s was sent as %v, want heddle's own token (sub heddle-worker, no act)", s.Method, s.RPC, c["sub"])
		}
	}
	if !slices.ContainsFunc(seen, func(s seenRequest) bool { return s.RPC == "initialize" }) {
		t.Errorf("no handshake reached the server: %+v", seen)
	}
	if len(calls) != 4 {
		t.Fatalf("%d tools/call reached the server, want 4", len(calls))
	}
	for _, c := range calls[1:] {
		if c.Authorization != calls[0].Authorization {
			t.Error("a later call was sent with another token: want the exchanged token reused, one exchange for every call of the caller")
		}
	}
	c := jwtClaims(t, calls[0].Authorization)
	act, _ := c["act"].(map[string]any)
	if c["sub"] != "ops-bot" || act["sub"] != "heddle-worker" || c["aud"] != who+"/mcp" {
		t.Errorf("the call's token: sub %v act %v aud %v: want ops-bot, heddle-worker, the server's URL", c["sub"], c["act"], c["aud"])
	}
}

// exchangeAnswer is the invoke API's answer to a call of whoami.
type exchangeAnswer struct {
	status     int
	body       string
	IsError    bool `json:"isError"`
	Structured struct {
		Sub string `json:"sub"`
		Act string `json:"act"`
	} `json:"structuredContent"`
}

// callAsCaller calls whoami of agent ops through the invoke API with the
// caller's token, finding the tool's name first when tool is empty.
func callAsCaller(t *testing.T, base, token, tool string) (exchangeAnswer, string) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	do := func(method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return res.StatusCode, b
	}
	if tool == "" {
		status, b := do("GET", "/v1/agents/ops/tools", "")
		var list []struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(b, &list); err != nil || status != 200 {
			t.Fatalf("listing ops's tools: %d %s", status, b)
		}
		for _, tl := range list {
			if strings.HasSuffix(tl.Name, "whoami") {
				tool = tl.Name
			}
		}
		if tool == "" {
			t.Fatalf("ops offers no whoami: %s", b)
		}
	}
	status, b := do("POST", "/v1/agents/ops/tools/"+tool, "{}")
	r := exchangeAnswer{status: status, body: string(b)}
	_ = json.Unmarshal(b, &r)
	return r, tool
}

// startWhoami runs integration/whoami against issuer and returns its base
// URL; it is stopped when the test ends.
func startWhoami(t *testing.T, bin, issuer string) string {
	t.Helper()
	return startListening(t, "whoami", exec.Command(bin, "--issuer", issuer), "listening on ", false)
}

// whoSeen is what the whoami server at base was sent so far.
func whoSeen(t *testing.T, base string) []seenRequest {
	t.Helper()
	res, err := http.Get(base + "/seen")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out []seenRequest
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// callsSeen counts the tools/call requests in seen.
func callsSeen(seen []seenRequest) int {
	n := 0
	for _, s := range seen {
		if s.RPC == "tools/call" {
			n++
		}
	}
	return n
}

// jwtClaims reads the claims of an Authorization header's bearer JWT,
// unverified: the whoami server verified it.
func jwtClaims(t *testing.T, header string) map[string]any {
	t.Helper()
	return claimsOf(t, strings.TrimPrefix(header, "Bearer "))
}

// bearerTransport sends every request with a bearer token.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// facadeWhoami calls whoami through heddle serve's MCP facade for agent
// ops, as a host with the caller's token, at the protocol version given
// ("": the newest).
func facadeWhoami(t *testing.T, base, token, version string) *mcp.CallToolResult {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "exchange-test", Version: "1"}, nil)
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp/ops", HTTPClient: &http.Client{Transport: bearerTransport{token}}}
	sess, err := c.Connect(t.Context(), tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := sess.CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
