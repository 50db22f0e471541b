package heddlecmd

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/otlptest"
	"github.com/heddlehq/heddle/internal/syncbuf"
	"github.com/heddlehq/heddle/internal/testmcp"
)

// randomCanary is a unique random string that can only be in a log by
// coming from the secret it is.
func randomCanary(t *testing.T, label string) string {
	t.Helper()
	return label + "-" + strings.ToLower(rand.Text())
}

// TestLogsNeverShowSecrets runs heddle with --log-level debug, in text and
// in JSON, against a configuration whose every secret is a random canary —
// an MCP server's bearer token (${env:…}) and header payload (${file:…}), a
// server that answers 401, a PostgreSQL dsn_ref that cannot connect, and a
// serve.auth token — through start-up, tools, a call, serve with a call over
// HTTP and a refused bearer token, and shutdown on SIGTERM; no line of
// standard error at any level carries any canary. Tracing is on, exporting
// over OTLP/HTTP to a collector on 127.0.0.1: no span attribute or event
// carries one either, and the log line of each call carries its trace_id
// and span_id.
func TestLogsNeverShowSecrets(t *testing.T) {
	bearer := randomCanary(t, "bearer")
	header := randomCanary(t, "header")
	rejected := randomCanary(t, "rejected")
	dsnPassword := randomCanary(t, "dsn")
	serveToken := randomCanary(t, "serve")
	canaries := []string{bearer, header, rejected, dsnPassword, serveToken}

	mcpHandler := testmcp.Handler(&testmcp.Options{Stateless: true})
	// The server checks the credential it was given and answers 401 without it.
	guarded := func(name, want string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(name) != want {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			mcpHandler.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	withBearer := guarded("Authorization", "Bearer "+bearer)
	withHeader := guarded("X-Api-Key", header)
	refusing := guarded("Authorization", "Bearer something-else")

	dir := t.TempDir()
	headerFile := filepath.Join(dir, "header-payload")
	tokenFile := filepath.Join(dir, "serve-token")
	writeFiles(t, dir, map[string]string{
		"header-payload": "X-Api-Key=" + header + "\n",
		"serve-token":    serveToken + "\n",
		"config/api.yaml": fmt.Sprintf(`ai:
  remote_clients: optional
  startup_timeout_ms: 10000
  mcp_servers:
    bearer:
      url: %s/mcp
      auth: {kind: bearer, token_ref: "${env:LOGTEST_CANARY_BEARER}"}
    header:
      url: %s/mcp
      headers_ref: "${file:%s}"
    refusing:
      url: %s/mcp
      auth: {kind: bearer, token_ref: "${env:LOGTEST_CANARY_REJECTED}"}
  sql_sources:
    pg:
      driver: postgres
      dsn_ref: "${env:LOGTEST_CANARY_DSN}"
      statements:
        one: {description: one row, sql: SELECT 1}
serve:
  auth:
    kind: tokens
    tokens:
      ci: {token_ref: "${file:%s}", subject: ci}
`, withBearer.URL, withHeader.URL, headerFile, refusing.URL, tokenFile),
		"agents/a/agent.yaml": `capabilities:
  - {kind: mcp, server: bearer}
  - {kind: mcp, server: header}
  - {kind: mcp, server: refusing}
  - {kind: sql, source: pg, statements: [one]}
`,
	})
	t.Setenv("LOGTEST_CANARY_BEARER", bearer)
	t.Setenv("LOGTEST_CANARY_REJECTED", rejected)
	// Nothing listens on port 1: the source is down, and says why at DEBUG.
	t.Setenv("LOGTEST_CANARY_DSN", "postgres://heddle:"+dsnPassword+"@127.0.0.1:1/heddle?connect_timeout=2")
	t.Chdir(dir)
	collector := otlptest.NewCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL())

	for _, format := range logFormats {
		t.Run(format, func(t *testing.T) {
			flags := []string{"--log-level", "debug", "--log-format", format}
			var logs []string
			run := func(want int, args ...string) string {
				t.Helper()
				var stdout bytes.Buffer
				stderr := &syncbuf.Buffer{}
				if code := Run(append(args, flags...), &stdout, stderr, Options{}); code != want {
					t.Fatalf("heddle %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, &stdout, stderr)
				}
				logs = append(logs, stderr.String())
				return stdout.String()
			}

			run(ExitOK, "tools", "a")
			if out := run(ExitOK, "call", "a", "bearer.echo", "--args", `{"text": "bearer"}`); !strings.Contains(out, "bearer") {
				t.Errorf("call bearer.echo printed %q", out)
			}
			run(ExitOK, "call", "a", "header.echo", "--args", `{"text": "header"}`)
			logs = append(logs, serveAndCall(t, flags, serveToken))

			all := strings.Join(logs, "")
			for _, c := range canaries {
				if strings.Contains(all, c) {
					t.Errorf("the log shows the secret %s:\n%s", c, linesWith(all, c))
				}
			}
			debug := map[string]string{"text": "level=DEBUG", "json": `"level":"DEBUG"`}[format]
			if !strings.Contains(all, debug) {
				t.Errorf("no DEBUG record in the log:\n%s", all)
			}
			for _, line := range strings.Split(strings.TrimSpace(all), "\n") {
				if format == "json" && strings.HasPrefix(line, "{") && !json.Valid([]byte(line)) {
					t.Errorf("a JSON log line does not parse: %s", line)
				}
				if format == "text" && strings.HasPrefix(line, "{") {
					t.Errorf("a JSON line in the text log: %s", line)
				}
			}
			if format == "json" && !strings.Contains(all, `"msg":"draining"`) {
				t.Errorf("the JSON log has no draining record:\n%s", all)
			}
			wantCallsTraced(t, format, all, collector)
		})
	}
	for _, body := range collector.Raw() {
		for _, c := range canaries {
			if bytes.Contains(body, []byte(c)) {
				t.Errorf("an exported span shows the secret %s", c)
			}
		}
	}
}

// wantCallsTraced fails the test unless every "call finished" line of the
// log carries the trace_id and span_id of an execute_tool span the
// collector received.
func wantCallsTraced(t *testing.T, format, log string, c *otlptest.Collector) {
	t.Helper()
	spans := map[string]bool{}
	for _, s := range c.Spans() {
		if strings.HasPrefix(s.Name, "execute_tool ") {
			spans[s.SpanContext.TraceID().String()+"/"+s.SpanContext.SpanID().String()] = true
		}
	}
	calls := 0
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "call finished") {
			continue
		}
		calls++
		var traceID, spanID string
		if format == "json" {
			var rec struct {
				TraceID string `json:"trace_id"`
				SpanID  string `json:"span_id"`
			}
			_ = json.Unmarshal([]byte(line), &rec)
			traceID, spanID = rec.TraceID, rec.SpanID
		} else {
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "trace_id="); ok {
					traceID = v
				}
				if v, ok := strings.CutPrefix(f, "span_id="); ok {
					spanID = v
				}
			}
		}
		if !spans[traceID+"/"+spanID] {
			t.Errorf("a call's log line names no exported execute_tool span (trace_id %q, span_id %q): %s", traceID, spanID, line)
		}
	}
	if calls < 3 {
		t.Errorf("%d call lines in the %s log, want at least 3", calls, format)
	}
}

// serveAndCall runs heddle serve with flags, calls a tool over HTTP with
// token and once with a wrong token (401), stops it with SIGTERM and
// returns its standard error.
func serveAndCall(t *testing.T, flags []string, token string) string {
	t.Helper()
	out, w := io.Pipe()
	stderr := &syncbuf.Buffer{}
	exit := make(chan int, 1)
	go func() {
		exit <- Run(append([]string{"serve", "--listen", "127.0.0.1:0"}, flags...), w, stderr, Options{})
		w.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "heddle: serving on ")
	if !ok {
		t.Fatalf("serve printed %q", line)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	post := func(bearer string) int {
		req, _ := http.NewRequest("POST", base+"/v1/agents/a/tools/bearer.echo", strings.NewReader(`{"text": "over http"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+bearer)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if got := post(token); got != http.StatusOK {
		t.Errorf("a call with the token: %d, want 200", got)
	}
	if got := post("not-" + token); got != http.StatusUnauthorized {
		t.Errorf("a call with a wrong token: %d, want 401", got)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != ExitOK {
			t.Errorf("serve exited %d after SIGTERM, want %d\n%s", code, ExitOK, stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
	return stderr.String()
}

// linesWith returns the lines of s that contain sub.
func linesWith(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
