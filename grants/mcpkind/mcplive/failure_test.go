package mcplive_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds, both halves
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// oneAgent grants server s to agent x.
var oneAgent = map[string]string{"x": `capabilities: [{kind: mcp, server: s}]`}

// failure opens a runtime whose one required server, s, must fail start-up,
// and returns its error.
func failure(t *testing.T, api string, opts runtime.Options) error {
	t.Helper()
	rt, err := runtime.Open(context.Background(), plantest.Must(t, api, oneAgent), opts)
	if err == nil {
		_ = rt.Close()
		t.Fatal("Open succeeded, want server s to fail start-up")
	}
	var se *runtime.StartupError
	if !errors.As(err, &se) || len(se.Failures) != 1 || se.Failures[0].Name != "s" {
		t.Fatalf("Open: %v, want one start-up failure of server s", err)
	}
	return se.Failures[0].Err
}

// wantCode fails the test unless err carries code.
func wantCode(t *testing.T, err error, code diag.Code) {
	t.Helper()
	if got := diag.CodeOf(err); got != code {
		t.Fatalf("code %q (%v), want %s", got, err, code)
	}
}

// script writes an executable shell script and returns its path.
func script(t *testing.T, dir, name, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStdioStartFailures: a stdio server whose command cannot start, or
// ends before the handshake, is MCP_SERVER_UNREACHABLE with a message that
// names the command and what became of it — the directory a relative
// command was looked for in, the last line the child wrote on stderr (and
// no earlier one), a long line cut.
func TestStdioStartFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	long := strings.Repeat("ab", 150)
	tests := []struct {
		name, command, dir string
		names              []string // what the message must name
		never              []string // what it must not
	}{
		{name: "relative, missing", command: "bin/absent-server", dir: dir, names: []string{"bin/absent-server", dir}},
		{name: "not in PATH", command: "heddle-no-such-command", names: []string{"heddle-no-such-command", "PATH"}},
		{name: "absolute, missing", command: filepath.Join(dir, "absent"), names: []string{filepath.Join(dir, "absent")}},
		{name: "not executable", command: script(t, dir, "plain", "exit 0", 0o644), names: []string{filepath.Join(dir, "plain")}},
		{name: "a directory", command: dir, names: []string{dir}},
		{name: "missing interpreter", command: func() string {
			p := filepath.Join(dir, "interp")
			_ = os.WriteFile(p, []byte("#!/nonexistent/interpreter\n"), 0o755)
			return p
		}(), names: []string{filepath.Join(dir, "interp")}},
		{name: "exits", command: script(t, dir, "exits", `echo early-line >&2; echo last-line-marker >&2; exit 3`, 0o755),
			names: []string{filepath.Join(dir, "exits"), "3", "last-line-marker"}, never: []string{"early-line"}},
		{name: "exits, long line without a newline", command: script(t, dir, "long", `printf '`+long+`' >&2; exit 1`, 0o755),
			names: []string{filepath.Join(dir, "long"), long[:100]}, never: []string{long[:202]}},
		{name: "garbage on stdout", command: script(t, dir, "garbage", `echo garbage; cat >/dev/null`, 0o755),
			names: []string{filepath.Join(dir, "garbage")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := fmt.Sprintf("ai:\n  startup_timeout_ms: 5000\n  mcp_servers:\n    s: {transport: stdio, command: %q, dir: %q}\n", tc.command, tc.dir)
			err := failure(t, api, runtime.Options{})
			wantCode(t, err, diag.MCPServerUnreachable)
			for _, n := range tc.names {
				if !strings.Contains(err.Error(), n) {
					t.Errorf("the message does not name %q: %v", n, err)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(err.Error(), n) {
					t.Errorf("the message holds %q: %v", n, err)
				}
			}
		})
	}
}

// statusServer answers every request with status.
func statusServer(t *testing.T, status int) *httptest.Server {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, http.StatusText(status), status)
	}))
	t.Cleanup(hs.Close)
	return hs
}

// TestAuthRejected: a server on 127.0.0.1 answering 401 or 403 to the
// handshake is MCP_AUTH_REJECTED, not MCP_SERVER_UNREACHABLE, over
// Streamable HTTP and SSE; the message names the status but neither the
// URL's path nor the credential. Optional, the server is down with that
// code in the health report.
func TestAuthRejected(t *testing.T) {
	const key = "sk-test-credential-7Qx"
	t.Setenv("HEDDLE_TEST_AUTH_HEADER", "X-Key="+key)
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		for _, transport := range []string{"http", "sse"} {
			t.Run(fmt.Sprintf("%s/%d", transport, status), func(t *testing.T) {
				hs := statusServer(t, status)
				server := fmt.Sprintf("{transport: %s, url: %q, headers_ref: \"%s\"}", transport, hs.URL+"/private-path", "${env:HEDDLE_TEST_AUTH_HEADER}")
				err := failure(t, "ai:\n  mcp_servers:\n    s: "+server+"\n", runtime.Options{})
				wantCode(t, err, diag.MCPAuthRejected)
				if msg := err.Error(); !strings.Contains(msg, strconv.Itoa(status)) || strings.Contains(msg, "private-path") || strings.Contains(msg, key) {
					t.Errorf("the message must name the status and neither the URL's path nor the key: %s", msg)
				}

				optional := strings.TrimSuffix(server, "}") + ", required: false}"
				rt, err := runtime.Open(context.Background(), plantest.Must(t, "ai:\n  mcp_servers:\n    s: "+optional+"\n", oneAgent), runtime.Options{})
				if err != nil {
					t.Fatalf("Open with the server optional: %v", err)
				}
				defer rt.Close()
				if code := rt.Unavailable()["s"]; code != diag.MCPAuthRejected {
					t.Errorf("the optional server is down with %q, want %s", code, diag.MCPAuthRejected)
				}
			})
		}
	}
}

// timeoutErr is a network error that timed out.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// failingDial is a base transport whose every dial fails with err.
func failingDial(err error) http.RoundTripper {
	return &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return nil, err }}
}

// TestUnreachableToldApart: a refused connection, a host that does not
// resolve, an untrusted certificate, a plain-HTTP server behind https://, a
// dial timeout and an HTTP error status are each MCP_SERVER_UNREACHABLE with
// a message of its own, none of which shows the URL's path.
func TestUnreachableToldApart(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake heddle refuses
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	notFound := statusServer(t, http.StatusNotFound)

	tests := []struct {
		name, url string
		base      http.RoundTripper
	}{
		{"refused", refused, nil},
		{"dns", "http://127.0.0.1:1", failingDial(&net.DNSError{Err: "no such host", Name: "runbooks.internal", IsNotFound: true})},
		{"tls untrusted", tlsSrv.URL, nil},
		{"plain http behind https", strings.Replace(plain.URL, "http://", "https://", 1), nil},
		{"dial timeout", "http://127.0.0.1:1", failingDial(&net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}})},
		{"http 404", notFound.URL, nil},
	}
	msgs := make([]string, len(tests))
	for i, tc := range tests {
		api := fmt.Sprintf("ai:\n  startup_timeout_ms: 5000\n  mcp_servers:\n    s: {url: %q}\n", tc.url+"/private-path")
		err := failure(t, api, runtime.Options{HTTPTransport: tc.base})
		wantCode(t, err, diag.MCPServerUnreachable)
		msgs[i] = err.Error()
		if strings.Contains(msgs[i], "private-path") {
			t.Errorf("%s: the message shows the URL's path: %s", tc.name, msgs[i])
		}
		if j := slices.Index(msgs[:i], msgs[i]); j >= 0 {
			t.Errorf("%s and %s give the same message: %s", tests[j].name, tc.name, msgs[i])
		}
	}
	for i, m := range msgs {
		t.Logf("%s: %s", tests[i].name, m)
	}
}

// TestCallRefusedMarksDown: a call to an HTTP server that stopped listening
// cannot have reached it: it answers TOOL_UNAVAILABLE and the server is
// down at once (not "a transient error" on a session taken for live), so
// that readiness tells the truth and the supervisor reconnects.
func TestCallRefusedMarksDown(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(testmcp.Handler(&testmcp.Options{Stateless: true}))
	api := fmt.Sprintf("ai:\n  mcp_servers:\n    s: {url: %q, timeout_ms: 5000}\n", hs.URL+"/mcp")
	rt, err := runtime.Open(context.Background(), plantest.Must(t, api, oneAgent), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ts, err := rt.Toolset("x")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := ts.Call(context.Background(), "echo", map[string]any{"text": "hi"}); err != nil || res.IsError {
		t.Fatalf("echo before the server stopped: %v, %v", res, err)
	}
	hs.CloseClientConnections() // ends the long-lived subscriptions stream, which Close waits for
	hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := ts.Call(ctx, "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatalf("echo after the server stopped: %v, want a refusal", err)
	}
	if code := runtime.RefusalCode(res); code != diag.ToolUnavailable {
		t.Fatalf("echo after the server stopped: code %q, want %s", code, diag.ToolUnavailable)
	}
	if _, down := rt.Unavailable()["s"]; !down {
		t.Error("the server is not down after a call found its port closed")
	}
}

// faultProxy is an HTTP server on 127.0.0.1 in front of an MCP test
// server, which answers every request with a fault while one is set: an
// HTTP status, or a connection reset (status -1).
type faultProxy struct {
	*httptest.Server
	fault atomic.Int32
}

const faultReset = -1

func newFaultProxy(t *testing.T) *faultProxy {
	srv := testmcp.NewServer(nil)
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})
	p := &faultProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch f := int(p.fault.Load()); {
		case f == faultReset:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			_ = conn.(*net.TCPConn).SetLinger(0) // close with RST
			_ = conn.Close()
		case f != 0:
			http.Error(w, http.StatusText(f), f)
		default:
			inner.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(func() {
		p.CloseClientConnections() // the long-lived event stream, which Close waits for
		p.Close()
		for ss := range srv.Sessions() { // those whose client could not say goodbye
			_ = ss.Close()
		}
	})
	return p
}

// TestConnectionFailureMarksDown: a call that fails for a connection
// reason — reset, or a 502 or 503 between heddle and the server — makes
// the required server down at once: the very next health report is not
// ready. Once the fault is gone the first call succeeds (it re-checks the
// server rather than wait for the backoff). What the server itself
// answers — a 500, a tool's own error, a slow tool's timeout — leaves it
// up.
func TestConnectionFailureMarksDown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault int
		down  bool
	}{
		{"reset", faultReset, true},
		{"502", http.StatusBadGateway, true},
		{"503", http.StatusServiceUnavailable, true},
		{"500", http.StatusInternalServerError, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newFaultProxy(t)
			api := fmt.Sprintf("ai:\n  mcp_servers:\n    s: {url: %q, timeout_ms: 1500}\n", p.URL+"/mcp")
			rt, err := runtime.Open(context.Background(), plantest.Must(t, api, oneAgent), runtime.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			ts, err := rt.Toolset("x")
			if err != nil {
				t.Fatal(err)
			}
			call := func(tool string, args map[string]any) diag.Code {
				t.Helper()
				res, err := ts.Call(context.Background(), tool, args)
				if err != nil {
					t.Fatalf("%s: error %v, want a result", tool, err)
				}
				if res.IsError && runtime.RefusalCode(res) == "" && tool != "fail" {
					t.Fatalf("%s: a tool error without a code: %s", tool, plantest.Text(res))
				}
				return runtime.RefusalCode(res)
			}
			// Neither a tool's own error nor a slow tool is a connection
			// failure.
			if code := call("fail", nil); code != "" {
				t.Fatalf("fail: code %q, want the tool's own error", code)
			}
			if code := call("sleep", map[string]any{"ms": 3000}); code != diag.TransportTimeout {
				t.Fatalf("sleep: code %q, want %s", code, diag.TransportTimeout)
			}
			if !rt.Health().Ready {
				t.Fatal("not ready after a tool error and a slow tool")
			}

			p.fault.Store(int32(tc.fault))
			if code := call("echo", map[string]any{"text": "hi"}); code != diag.ToolUnavailable {
				t.Fatalf("echo under the fault: code %q, want %s", code, diag.ToolUnavailable)
			}
			if down := !rt.Health().Ready; down != tc.down {
				t.Fatalf("right after the failed call: down = %v, want %v", down, tc.down)
			}
			if tc.down {
				if d := rt.Health().Dependencies[0]; d.State != driver.StateDown || d.Since == nil {
					t.Errorf("s in the report: %+v, want down with a since", d)
				}
			}

			p.fault.Store(0)
			start := time.Now()
			if code := call("echo", map[string]any{"text": "back"}); code != "" {
				t.Fatalf("echo once the fault is gone: code %q", code)
			}
			d := time.Since(start)
			if d > time.Second {
				t.Errorf("the first call once the fault was gone took %v", d)
			}
			t.Logf("the first call once the fault was gone: %v", d)
			if !rt.Health().Ready {
				t.Error("not ready once a call succeeded")
			}
		})
	}
}

// TestHandshakeTeardownBounded: a server that answers initialize with a
// session, then holds every other request (the initialized notification,
// and the DELETE go-sdk sends as it tears the failed handshake down, with
// a fixed 5 s of its own), fails start-up at its deadline, not 5 s after.
func TestHandshakeTeardownBounded(t *testing.T) {
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPost && strings.Contains(string(body), `"initialize"`) {
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(body, &req)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s-1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"held","version":"1"}}}`, req.ID)
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hs.Close()
	defer close(release)
	api := fmt.Sprintf("ai:\n  startup_timeout_ms: 1000\n  mcp_servers:\n    s: {transport: http, url: %q, protocol_version: \"2025-11-25\"}\n", hs.URL)
	start := time.Now()
	err := failure(t, api, runtime.Options{})
	took := time.Since(start)
	wantCode(t, err, diag.MCPServerUnreachable)
	if took > 2*time.Second {
		t.Errorf("start-up failed after %v, want about its 1s deadline", took.Round(time.Millisecond))
	}
}
