// Command heddle-example-agent is the example application's remote agent:
// a triage agent that speaks A2A 1.0 over JSON-RPC (its card at
// /.well-known/agent-card.json, SendMessage at /rpc) and answers an incident
// description with a triage suggestion. The shipped example grants it as
// kind a2a; it is deterministic, so that what heddle makes of it can be
// shown and tested.
//
//	heddle-example-agent --listen 127.0.0.1:8091
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("heddle-example-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8091", "address to listen on")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "heddle-example-agent: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: Handler(), ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(stderr, "heddle-example-agent: listening on http://%s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "heddle-example-agent: %v\n", err)
		return 1
	}
	return 0
}

// Handler serves the agent: its card and its JSON-RPC endpoint.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", card)
	mux.HandleFunc("POST /rpc", rpc)
	return mux
}

func card(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{
		"name":        "Incident triage",
		"description": "Suggests a severity and a first step for an incident, from its description.",
		"version":     "1.0.0",
		"skills": []any{map[string]any{"id": "triage", "name": "triage",
			"description": "severity and first step for an incident description"}},
		"supportedInterfaces": []any{map[string]any{
			"url": "http://" + r.Host + "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
	})
}

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Message struct {
			Role  string `json:"role"`
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"message"`
	} `json:"params"`
}

func rpc(w http.ResponseWriter, r *http.Request) {
	var req rpcRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		writeJSON(w, rpcError(nil, -32700, "the request is not JSON"))
		return
	}
	if req.Method != "SendMessage" {
		writeJSON(w, rpcError(req.ID, -32601, "method not found: this agent answers SendMessage"))
		return
	}
	var text strings.Builder
	for _, p := range req.Params.Message.Parts {
		text.WriteString(p.Text)
	}
	writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
		"message": map[string]any{"messageId": "triage-1", "role": "ROLE_AGENT",
			"parts": []any{map[string]any{"text": Triage(text.String())}}},
	}})
}

// rules map words of an incident description to a severity and a first
// step; the first rule whose word appears wins.
var rules = []struct {
	words    []string
	severity int
	step     string
}{
	{[]string{"outage", "down", "502", "503"}, 5, "page the on-call engineer and open an incident channel"},
	{[]string{"disk", "full", "space"}, 4, "free space on the volume (runbook RB-103) before pods are evicted"},
	{[]string{"login", "sso", "auth"}, 4, "check the identity provider's status and the last certificate rotation"},
	{[]string{"slow", "latency"}, 3, "compare p99 latency with the last deploy"},
}

// Triage answers one incident description.
func Triage(description string) string {
	d := strings.ToLower(description)
	for _, r := range rules {
		for _, w := range r.words {
			if strings.Contains(d, w) {
				return fmt.Sprintf("severity %d: %s", r.severity, r.step)
			}
		}
	}
	return "severity 2: gather logs and metrics, then describe the impact"
}

func rpcError(id json.RawMessage, code int, msg string) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
