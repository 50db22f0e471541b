package mcphttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/internal/testmcp"
)

// recorder records the method, the MCP headers and the JSON-RPC method of
// each request it sends.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	reqs []seen
}

type seen struct {
	method, session, version, mcpMethod, mcpName string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, seen{req.Method, req.Header.Get(hdrSession), req.Header.Get(hdrVersion), req.Header.Get(hdrMethod), req.Header.Get(hdrName)})
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

func (r *recorder) all() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// TestTransport drives go-sdk's client over the transport against go-sdk's
// server (internal/testmcp), at both revisions, answered with event
// streams and with JSON: the handshake, a listing, a call, a list_changed
// notification (over the standalone stream at 2025-11-25, over
// subscriptions/listen at 2026-07-28), the headers each revision's
// requests carry, and the DELETE that ends a session.
func TestTransport(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      testmcp.Options
		version   string
		sessioned bool
	}{
		{"2025-11-25/events", testmcp.Options{}, "2025-11-25", true},
		{"2025-11-25/json", testmcp.Options{JSONResponse: true}, "2025-11-25", true},
		{"2026-07-28/events", testmcp.Options{Stateless: true}, "2026-07-28", false},
		{"2026-07-28/json", testmcp.Options{Stateless: true, JSONResponse: true}, "2026-07-28", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(testmcp.Handler(&tc.opts))
			defer ts.Close()
			rec := &recorder{next: http.DefaultTransport}
			changed := make(chan struct{}, 8)
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			})
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			tr := NewTransport(Options{Endpoint: ts.URL + testmcp.StreamablePath, Client: &http.Client{Transport: rec}})
			cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != tc.version {
				t.Errorf("negotiated %s, want %s", got, tc.version)
			}
			if (cs.ID() != "") != tc.sessioned {
				t.Errorf("session id %q; want one: %v", cs.ID(), tc.sessioned)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) == 0 {
				t.Fatalf("listing: %v, %v", tools, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hello" {
				t.Fatalf("echo: %+v, %v", res, err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_tool", Arguments: map[string]any{"name": "fresh"}}); err != nil {
				t.Fatal(err)
			}
			if !tc.opts.JSONResponse || tc.sessioned { // a JSON answer has no stream for a notification, but the standalone stream does
				select {
				case <-changed:
				case <-ctx.Done():
					t.Fatal("no notifications/tools/list_changed")
				}
			}
			if err := cs.Close(); err != nil {
				t.Fatal(err)
			}
			reqs := rec.all()
			var calls, deletes, gets int
			for _, r := range reqs {
				switch r.method {
				case http.MethodDelete:
					deletes++
				case http.MethodGet:
					gets++
				}
				if r.mcpMethod == "tools/call" {
					calls++
					if r.mcpName != "echo" && r.mcpName != "add_tool" {
						t.Errorf("tools/call with Mcp-Name %q", r.mcpName)
					}
				}
				if tc.sessioned && r.mcpMethod != "" {
					t.Errorf("a request of 2025-11-25 carried Mcp-Method %q", r.mcpMethod)
				}
				if !tc.sessioned && r.session != "" {
					t.Errorf("a request of 2026-07-28 carried a session: %+v", r)
				}
			}
			if tc.sessioned {
				if deletes != 1 || gets != 1 {
					t.Errorf("%d DELETEs and %d GETs, want 1 and 1: %+v", deletes, gets, reqs)
				}
				for _, r := range reqs[1:] { // all but initialize
					if r.session == "" || r.version != "2025-11-25" {
						t.Errorf("a request after initialize without the session or version: %+v", r)
					}
				}
			} else {
				if deletes != 0 || gets != 0 || calls != 2 {
					t.Errorf("%d DELETEs, %d GETs and %d tools/call with Mcp-Method; want 0, 0 and 2: %+v", deletes, gets, calls, reqs)
				}
				for _, r := range reqs {
					if r.version != "2026-07-28" {
						t.Errorf("a request without version 2026-07-28: %+v", r)
					}
				}
			}
		})
	}
}

// TestStatuses: a transient error status (503), or one whose body holds a
// JSON-RPC error (400), answers the request it refuses without ending the
// connection, and the JSON-RPC error reaches the caller.
func TestStatuses(t *testing.T) {
	var mu sync.Mutex
	answer := 0 // the status the next tools/call gets; 0 passes it on
	ts := httptest.NewServer(answering("echo", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
		mu.Lock()
		code := answer
		mu.Unlock()
		if code == 0 {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32000,"message":"busy here"}}`))
		return true
	}))
	t.Cleanup(ts.Close)
	ctx, _, cs := connectAt(t, ts.URL, Options{})
	echo := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}
	for _, code := range []int{http.StatusServiceUnavailable, http.StatusBadRequest} {
		mu.Lock()
		answer = code
		mu.Unlock()
		_, err := cs.CallTool(ctx, echo)
		want := "busy here" // the server's JSON-RPC error
		if code == http.StatusServiceUnavailable {
			want = "Service Unavailable" // transient: go-sdk's client reads no body of it either
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("HTTP %d: %v; want an error with %q", code, err, want)
		}
		mu.Lock()
		answer = 0
		mu.Unlock()
		if _, err := cs.CallTool(ctx, echo); err != nil {
			t.Errorf("after HTTP %d the connection failed: %v", code, err)
		}
	}
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

// capture is a transport that keeps the connection it made.
type capture struct {
	mcp.Transport
	conn *conn
}

func (c *capture) Connect(ctx context.Context) (mcp.Connection, error) {
	made, err := c.Transport.Connect(ctx)
	if err == nil {
		c.conn = made.(*conn)
	}
	return made, err
}

// TestCall: Call reads a call's answer on the calling goroutine, at both
// revisions and with both kinds of answer, while the session goes on
// through go-sdk; a caller who gives up gets its context's error.
func TestCall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    testmcp.Options
		version string
	}{
		{"2025-11-25/events", testmcp.Options{HangOnCall: []string{"fail"}}, "2025-11-25"},
		{"2025-11-25/json", testmcp.Options{HangOnCall: []string{"fail"}, JSONResponse: true}, "2025-11-25"},
		{"2026-07-28/events", testmcp.Options{HangOnCall: []string{"fail"}, Stateless: true}, "2026-07-28"},
		{"2026-07-28/json", testmcp.Options{HangOnCall: []string{"fail"}, Stateless: true, JSONResponse: true}, "2026-07-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(testmcp.Handler(&tc.opts))
			defer ts.Close()
			tr := &capture{Transport: NewTransport(Options{Endpoint: ts.URL + testmcp.StreamablePath})}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			meta := ""
			if tc.version == "2026-07-28" {
				meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}},`
			}
			id, _ := jsonrpc.MakeID("mine-1")
			resp, err := tr.conn.Call(ctx, &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{` + meta + `"name":"echo","arguments":{"text":"direct"}}`)})
			if err != nil || resp.Error != nil || !strings.Contains(string(resp.Result), `"direct"`) {
				t.Fatalf("Call: %+v, %v", resp, err)
			}
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatalf("the session after a Call: %v", err)
			}
			short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
			defer stop()
			id2, _ := jsonrpc.MakeID("mine-2")
			if _, err := tr.conn.Call(short, &jsonrpc.Request{ID: id2, Method: "tools/call", Params: json.RawMessage(`{` + meta + `"name":"fail","arguments":{}}`)}); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a hung call: %v, want the deadline", err)
			}
			// As heddle does for a caller who gave up: the server's handler ends.
			if err := tr.conn.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":"mine-2","reason":"gave up"}`)}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// answering serves go-sdk's server (internal/testmcp), but a tools/call of
// the tool named name goes first to answer, given the request's id, which
// reports whether it answered; what it leaves goes on to the server.
func answering(name string, answer func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool) http.Handler {
	inner := testmcp.Handler(&testmcp.Options{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" && m.Params.Name == name && answer(w, r, m.ID) {
				return
			}
			r.Body = readCloser{strings.NewReader(string(body))}
		}
		inner.ServeHTTP(w, r)
	})
}

// connectAt connects go-sdk's client at 2025-11-25 to the server at url,
// through a transport with options o; the session ends with the test,
// before the server if the server's Close was registered first with
// t.Cleanup. The context bounds what the test does with it.
func connectAt(t *testing.T, url string, o Options) (context.Context, *capture, *mcp.ClientSession) {
	t.Helper()
	o.Endpoint = url + testmcp.StreamablePath
	tr := &capture{Transport: NewTransport(o)}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return ctx, tr, cs
}

// answerEvent is the event that answers call id with text.
func answerEvent(id json.RawMessage, text string) string {
	return `event: message` + "\n" + `data: {"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"` + text + `"}]}}` + "\n\n"
}

// TestCallStreamEnded: a stream that ends with its answer, in the read that
// brings the answer, is closed as it is: nothing is left to drain, so no
// timer is armed for it, and its connection serves the next call.
func TestCallStreamEnded(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	ts := httptest.NewServer(answering("ended", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		// Written whole as the handler returns: the answer and the
		// stream's end come together.
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, answerEvent(id, "ended"))
		return true
	}))
	t.Cleanup(ts.Close)
	// One connection at most: go-sdk reads initialize's answer through
	// Write, whose goroutine may hand a connection back to the pool after
	// a call has begun, and the pool hands out the last one back. With
	// one, a call whose stream was closed early would make the next call
	// dial again.
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	t.Cleanup(client.CloseIdleConnections)
	ctx, tr, _ := connectAt(t, ts.URL, Options{NoStandaloneStream: true, Client: client})
	before := drains.Load()
	for i := range 3 {
		id, _ := jsonrpc.MakeID(fmt.Sprintf("ended-%d", i))
		resp, err := tr.conn.Call(ctx, &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{"name":"ended","arguments":{}}`)})
		if err != nil || resp.Error != nil || !strings.Contains(string(resp.Result), `"ended"`) {
			t.Fatalf("Call %d: %+v, %v", i, resp, err)
		}
	}
	if _, err := tr.conn.Call(ctx, &jsonrpc.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"ended"}`)}); err == nil {
		t.Error("Call took a request without an id")
	}
	if n := drains.Load() - before; n != 0 {
		t.Errorf("%d streams that had ended were drained under a timer, want none", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 1 {
		t.Errorf("3 calls came over %d connections, want 1", len(conns))
	}
}

// TestCallStreamHeld: a server that answers a call in an event stream and
// then holds the stream open costs the call a moment, not its deadline: the
// answer is handed over once the rest of the stream has been read for at
// most drainWait, and the connection that held it is closed.
func TestCallStreamHeld(t *testing.T) {
	release := make(chan struct{})
	dropped := make(chan struct{}, 2) // a held stream whose client went away
	ts := httptest.NewServer(answering("held", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, answerEvent(id, "held"))
		w.(http.Flusher).Flush()
		select { // the stream stays open
		case <-release:
		case <-r.Context().Done():
			dropped <- struct{}{}
		}
		return true
	}))
	t.Cleanup(ts.Close)
	defer close(release)
	ctx, tr, cs := connectAt(t, ts.URL, Options{})

	callCtx, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	before := drains.Load()
	start := time.Now()
	id, _ := jsonrpc.MakeID("held-1")
	resp, err := tr.conn.Call(callCtx, &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{"name":"held","arguments":{}}`)})
	took := time.Since(start)
	if err != nil || resp.Error != nil || !strings.Contains(string(resp.Result), `"held"`) {
		t.Fatalf("Call: %+v, %v", resp, err)
	}
	if took > drainWait+time.Second {
		t.Errorf("the call took %v with its answer read; want at most drainWait (%v) and a little", took, drainWait)
	}
	if drains.Load() == before {
		t.Error("the held stream was not drained under a timer")
	}
	select {
	case <-dropped:
	case <-time.After(2 * time.Second):
		t.Error("the connection of the held stream was not closed")
	}
	// go-sdk's own requests are read the same way, off its caller's path.
	start = time.Now()
	if res, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "held", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("CallTool: %+v, %v", res, err)
	}
	if took := time.Since(start); took > drainWait+time.Second {
		t.Errorf("go-sdk's call took %v", took)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Errorf("a call after a held stream: %v", err)
	}
}
