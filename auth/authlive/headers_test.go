package authlive_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds, both halves

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
)

// recorder is an MCP server on loopback that records, for every request,
// the values of one header.
type recorder struct {
	name string
	mu   sync.Mutex
	seen [][]string
}

func (rec *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, r.Header.Values(rec.name))
		rec.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// TestBuiltinHeadersEndToEnd opens a runtime over real HTTP with the bearer
// and static strategies (and the headers_ref shorthand), makes calls, and
// checks that every request the server saw — initialize, lists, calls, the
// event stream, the session's DELETE — carried the header exactly once.
func TestBuiltinHeadersEndToEnd(t *testing.T) {
	vals := map[string]string{
		"TOKEN":   "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0In0.c2ln",
		"HEADERS": "X-Api-Key=abc123def456",
	}
	for _, c := range []struct {
		name, auth, header, want string
	}{
		{"bearer", "auth: {kind: bearer, token_ref: ${env:TOKEN}}", "Authorization", "Bearer " + vals["TOKEN"]},
		{"static", "auth: {kind: static, headers_ref: ${env:HEADERS}}", "X-Api-Key", "abc123def456"},
		{"headers_ref", "headers_ref: ${env:HEADERS}", "X-Api-Key", "abc123def456"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{name: c.header}
			srv := httptest.NewServer(rec.wrap(testmcp.Handler(nil)))
			defer srv.Close()
			api := fmt.Sprintf("ai:\n  mcp_servers:\n    s:\n      url: %s%s\n      %s\n", srv.URL, testmcp.StreamablePath, c.auth)
			fsys := fstest.MapFS{
				"config/api.yaml":     {Data: []byte(api)},
				"agents/a/agent.yaml": {Data: []byte(`capabilities: [{kind: mcp, server: s}]`)},
			}
			cfg, ds := config.Load(config.Options{FS: fsys})
			p, cds := compile.Compile(compile.Input{Config: cfg})
			if ds = append(ds, cds...); ds.HasErrors() {
				t.Fatal(ds.Err())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			rt, err := runtime.Open(ctx, p, runtime.Options{Secrets: secrets.New(secrets.Options{
				LookupEnv: func(k string) (string, bool) { v, ok := vals[k]; return v, ok },
			})})
			if err != nil {
				t.Fatal(err)
			}
			ts, err := rt.Toolset("a")
			if err != nil {
				t.Fatal(err)
			}
			for range 5 {
				if res, err := ts.Call(ctx, "echo", map[string]any{"text": "x"}); err != nil || res.IsError {
					t.Fatalf("echo: %v %v", res, err)
				}
			}
			_ = rt.Close()

			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.seen) < 7 {
				t.Fatalf("server saw %d requests, want at least 7", len(rec.seen))
			}
			for i, vs := range rec.seen {
				if len(vs) != 1 || vs[0] != c.want {
					t.Errorf("request %d carried %d %s headers, want exactly one with the configured value", i, len(vs), c.header)
				}
			}
		})
	}
}
