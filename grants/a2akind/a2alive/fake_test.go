package a2alive_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/heddlehq/heddle/internal/memnet"
)

// fakeAgent is an A2A agent written for these tests, speaking A2A 1.0 or,
// with legacy set, only A2A 0.3. What it answers depends on the message:
//
//	"task: x"   a completed task whose artifact is "echo: x"
//	"slow: x"   a working task, completed after two GetTask polls
//	"fail: x"   a failed task saying x
//	"input: x"  a task that needs input, asking x
//	"error"     a JSON-RPC error
//	"hang"      no answer until the request is cancelled
//	otherwise   a message "echo: <text>"
type fakeAgent struct {
	t      *testing.T
	srv    *httptest.Server
	legacy bool
	token  string // when set, every request needs "Bearer <token>"
	// cardURL, when set, replaces the JSON-RPC URL the card names.
	cardURL string
	// net, when set, is where the agent listens instead of loopback: for
	// tests in a synctest bubble.
	net *memnet.Network

	mu      sync.Mutex
	polls   map[string]int
	methods []string
	version []string // A2A-Version headers seen on calls
	traces  []string // traceparent headers seen on calls
	cards   atomic.Int64
}

func newFakeAgent(t *testing.T, configure func(*fakeAgent)) *fakeAgent {
	f := &fakeAgent{t: t, polls: map[string]int{}}
	if configure != nil {
		configure(f)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", f.card)
	mux.HandleFunc("POST /rpc", f.rpc)
	if f.net != nil {
		f.srv = f.net.Server(f.auth(mux))
	} else {
		f.srv = httptest.NewServer(f.auth(mux))
	}
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAgent) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (f *fakeAgent) card(w http.ResponseWriter, r *http.Request) {
	f.cards.Add(1)
	rpcURL := "http://" + r.Host + "/rpc"
	if f.cardURL != "" {
		rpcURL = f.cardURL
	}
	c := map[string]any{
		"name":        "Fake Echo",
		"description": "Echoes\nwhat it is sent.",
		"skills":      []any{map[string]any{"id": "echo", "name": "echo", "description": "repeat text"}},
	}
	if f.legacy {
		c["protocolVersion"] = "0.3.0"
		c["url"] = rpcURL
		c["preferredTransport"] = "JSONRPC"
	} else {
		c["supportedInterfaces"] = []any{
			map[string]any{"url": rpcURL, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
			map[string]any{"url": rpcURL, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(c)
}

func (f *fakeAgent) rpc(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.traces = append(f.traces, r.Header.Get("traceparent"))
	f.mu.Unlock()
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ID      string `json:"id"`
			Message struct {
				Kind  string `json:"kind"`
				Role  string `json:"role"`
				Parts []struct {
					Kind string `json:"kind"`
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"message"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.methods = append(f.methods, req.Method)
	f.version = append(f.version, r.Header.Get("A2A-Version"))
	f.mu.Unlock()
	reply := func(result any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}
	send, get := "SendMessage", "GetTask"
	if f.legacy {
		send, get = "message/send", "tasks/get"
	}
	switch req.Method {
	case send:
		wantRole, wantKind := "ROLE_USER", ""
		if f.legacy {
			wantRole, wantKind = "user", "text"
		}
		if req.Params.Message.Role != wantRole || len(req.Params.Message.Parts) != 1 || req.Params.Message.Parts[0].Kind != wantKind {
			f.t.Errorf("malformed message: %+v", req.Params.Message)
		}
		text := req.Params.Message.Parts[0].Text
		mode, rest, _ := strings.Cut(text, ": ")
		switch {
		case text == "error":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID,
				"error": map[string]any{"code": -32603, "message": "the model\nis overloaded"}})
		case text == "hang":
			<-r.Context().Done()
		case mode == "task":
			reply(f.wrapTask(f.task("t1", "completed", "", "echo: "+rest)))
		case mode == "slow":
			f.mu.Lock()
			f.polls["t2"] = 0
			f.mu.Unlock()
			reply(f.wrapTask(f.task("t2", "working", "", "")))
		case mode == "fail":
			reply(f.wrapTask(f.task("t3", "failed", rest, "")))
		case mode == "input":
			reply(f.wrapTask(f.task("t4", "input-required", rest, "")))
		default:
			reply(f.wrapMessage(f.message("echo: " + text)))
		}
	case get:
		f.mu.Lock()
		f.polls[req.Params.ID]++
		n := f.polls[req.Params.ID]
		f.mu.Unlock()
		if n < 2 {
			reply(f.task(req.Params.ID, "working", "", ""))
			return
		}
		reply(f.task(req.Params.ID, "completed", "", "echo: slow done"))
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID,
			"error": map[string]any{"code": -32601, "message": "Invalid method."}})
	}
}

func (f *fakeAgent) state(s string) string {
	if f.legacy {
		return s
	}
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}

func (f *fakeAgent) message(text string) map[string]any {
	m := map[string]any{"messageId": "m1", "role": "ROLE_AGENT", "parts": []any{map[string]any{"text": text}}}
	if f.legacy {
		m = map[string]any{"kind": "message", "messageId": "m1", "role": "agent",
			"parts": []any{map[string]any{"kind": "text", "text": text}}}
	}
	return m
}

func (f *fakeAgent) task(id, state, said, artifact string) map[string]any {
	status := map[string]any{"state": f.state(state)}
	if said != "" {
		status["message"] = f.message(said)
	}
	t := map[string]any{"id": id, "contextId": "c1", "status": status}
	if artifact != "" {
		p := map[string]any{"text": artifact}
		if f.legacy {
			p["kind"] = "text"
		}
		t["artifacts"] = []any{map[string]any{"artifactId": "a1", "parts": []any{p}}}
	}
	if f.legacy {
		t["kind"] = "task"
	}
	return t
}

func (f *fakeAgent) wrapTask(t map[string]any) any {
	if f.legacy {
		return t
	}
	return map[string]any{"task": t}
}

func (f *fakeAgent) wrapMessage(m map[string]any) any {
	if f.legacy {
		return m
	}
	return map[string]any{"message": m}
}

func (f *fakeAgent) seen() (methods, versions []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.methods...), append([]string(nil), f.version...)
}

// api returns an api.yaml declaring one remote agent named name at url.
func api(name, url, extra string) string {
	return fmt.Sprintf("ai:\n  startup_timeout_ms: 3000\n  a2a_agents:\n    %s:\n      url: %s\n%s", name, url, extra)
}
