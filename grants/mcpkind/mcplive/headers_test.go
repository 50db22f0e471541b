package mcplive_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
)

// headerLog records the headers each request to an MCP test server came
// with.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
}

func (l *headerLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Header.Clone())
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// each fails the test unless every request carried name with value want.
func (l *headerLog) each(t *testing.T, name, want string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.seen) == 0 {
		t.Fatal("the server saw no request")
	}
	for i, h := range l.seen {
		if got := h.Values(name); len(got) != 1 || got[0] != want {
			t.Errorf("request %d of %d: %s = %q, want exactly %q", i+1, len(l.seen), name, got, want)
		}
	}
}

// fixedSecrets resolves references from a map.
func fixedSecrets(m map[string]string) secrets.Resolver {
	return secrets.Func(func(_ context.Context, ref config.Ref) (secrets.Value, error) {
		v, ok := m[ref.String()]
		if !ok {
			return secrets.Value{}, diag.New(diag.SecretUnresolved, "%s is not set", ref)
		}
		return secrets.NewValue(v), nil
	})
}

// TestServerHeaders: a server's headers: map, a plain value and a
// reference, reaches the server on every request — the handshake, the
// listing, a call, over Streamable HTTP and legacy SSE — and the resolved
// value shows in no log line. Beside an auth strategy, the strategy's
// header wins for one name.
func TestServerHeaders(t *testing.T) {
	t.Parallel()
	const token = "Bearer hdr-s3cret-value"
	tests := []struct {
		name, transport, path, extra string
		want                         map[string]string
	}{
		{name: "http", transport: "http", path: testmcp.StreamablePath,
			want: map[string]string{"X-Tenant-Id": "acme", "Authorization": token}},
		{name: "sse", transport: "sse", path: testmcp.SSEPath,
			want: map[string]string{"X-Tenant-Id": "acme", "Authorization": token}},
		{name: "beside headers_ref, the strategy wins", transport: "http", path: testmcp.StreamablePath,
			extra: `, headers_ref: "${env:STATIC_PAYLOAD}"`,
			want:  map[string]string{"X-Tenant-Id": "from-strategy"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			log := &headerLog{}
			hs := httptest.NewServer(log.wrap(testmcp.Handler(&testmcp.Options{})))
			defer hs.Close()
			headers := `{X-Tenant-Id: acme, Authorization: "${env:HEDDLE_TEST_MCP_AUTH}"}`
			if tc.extra != "" {
				headers = `{X-Tenant-Id: acme}`
			}
			api := fmt.Sprintf("ai:\n  mcp_servers:\n    s: {transport: %s, url: %q, timeout_ms: 5000, headers: %s%s}\n",
				tc.transport, hs.URL+tc.path, headers, tc.extra)
			var logs bytes.Buffer
			rt, err := runtime.Open(context.Background(), plantest.Must(t, api, oneAgent), runtime.Options{
				Secrets: fixedSecrets(map[string]string{
					"${env:HEDDLE_TEST_MCP_AUTH}": token,
					"${env:STATIC_PAYLOAD}":       "X-Tenant-Id=from-strategy",
				}),
				Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			})
			if err != nil {
				t.Fatal(err)
			}
			ts, err := rt.Toolset("x")
			if err != nil {
				t.Fatal(err)
			}
			if res, err := ts.Call(context.Background(), "echo", map[string]any{"text": "hi"}); err != nil || res.IsError {
				t.Fatalf("echo: %v, %v", res, err)
			}
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.want {
				log.each(t, name, want)
			}
			if strings.Contains(logs.String(), "hdr-s3cret-value") {
				t.Errorf("the log shows a header's resolved value:\n%s", logs.String())
			}
		})
	}
}

// TestServerHeadersUnresolved: a header's reference that does not resolve
// fails the server's start-up with SECRET_UNRESOLVED, one that resolves to
// nothing with SECRET_EMPTY, and one whose value holds a line break with
// MCP_HEADERS_REF_INVALID; no message shows a value.
func TestServerHeadersUnresolved(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(testmcp.Handler(&testmcp.Options{Stateless: true}))
	defer hs.Close()
	resolver := secrets.Func(func(_ context.Context, ref config.Ref) (secrets.Value, error) {
		switch ref.Name {
		case "EMPTY":
			return secrets.Value{}, diag.New(diag.SecretEmpty, "%s resolved to an empty value", ref)
		case "BROKEN":
			return secrets.NewValue("line-one\r\nX-Injected: evil-s3cret"), nil
		}
		return secrets.Value{}, diag.New(diag.SecretUnresolved, "%s is not set", ref)
	})
	for name, code := range map[string]diag.Code{"UNSET": diag.SecretUnresolved, "EMPTY": diag.SecretEmpty, "BROKEN": diag.MCPHeadersRefInvalid} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			api := fmt.Sprintf("ai:\n  mcp_servers:\n    s: {url: %q, headers: {X-Api-Key: \"${env:%s}\"}}\n", hs.URL+"/mcp", name)
			err := failure(t, api, runtime.Options{Secrets: resolver})
			wantCode(t, err, code)
			if strings.Contains(err.Error(), "evil-s3cret") {
				t.Errorf("the message shows the value: %v", err)
			}
		})
	}
}
