package mcplive_test

import (
	"context"
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
	"testing"
	"time"

	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds, both halves
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
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
	if !errors.As(err, &se) || len(se.Failures) != 1 || se.Failures[0].Server != "s" {
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
