package heddlecmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCanarySecretsNeverPrinted writes a configuration with a secret-looking
// literal in every value position — URLs, header payloads, every auth
// setting, env values, DSNs, checksums, numbers, enums, policies — and
// checks that no output of check or plan, text or JSON, repeats any of them.
// Names (of servers, statements, kinds, keys) are identifiers the operator
// chose and may be echoed; values never are.
func TestCanarySecretsNeverPrinted(t *testing.T) {
	n := 0
	canary := func() string {
		n++
		return fmt.Sprintf("sk-canary-%02d-Zq8", n)
	}
	api := fmt.Sprintf(`ai:
  startup_timeout_ms: %[1]s
  remote_clients: %[2]s
  unknown_setting: %[3]s
  mcp_servers:
    s1:
      url: https://admin:%[4]s@runbooks.example.com/mcp?token=%[5]s
      headers_ref: X-Key=%[6]s
      auth:
        kind: bearer
        token_ref: %[7]s
        extra: %[8]s
      timeout_ms: %[9]s
      protocol_version: %[10]s
      max_result_bytes: %[11]s
    s2:
      transport: stdio
      command: %[12]s
      url: https://%[13]s.example.com
      headers_ref: %[14]s
      env:
        A: Bearer %[15]s
        B: "{%[16]s}"
        C: https://u:%[17]s@git.example.com
        D: "'%[18]s'"
    s3:
      transport: %[19]s
      url: http://%[20]s.example.com/mcp
    s4:
      url: https://catalog.example.com/mcp
      auth:
        kind: oauth
        client_secret_ref: %[21]s
        refresh_token_ref: "${vault:%[22]s}"
        scopes: %[23]s
        flow: %[24]s
  a2a_agents:
    t:
      url: http://%[25]s.example.com?x=%[26]s
      auth: {kind: bearer, token_ref: %[27]s}
      timeout_ms: %[28]s
  sql_sources:
    p:
      driver: %[29]s
      dsn_ref: postgres://u:%[30]s@db/x
      path: %[31]s
      max_rows: %[32]s
    q:
      driver: postgres
      dsn_ref: "${secrets:%[33]s}"
      statements:
        s:
          sql: SELECT :p
          params:
            p: {type: %[34]s, from: %[35]s}
  auth_plugins:
    x:
      command: bin/plugin
      sha256: %[36]s
      env:
        K: "%[37]s value"
  secrets: {dir: 42}
`, canary(), canary(), canary(), canary(), canary(), canary(), canary(), canary(), canary(), canary(),
		canary(), canary(), canary(), canary(), canary(), canary(), canary(), canary(), canary(), canary(),
		canary(), canary(), canary(), canary(), canary(), canary(), canary(), canary(), canary(), canary(),
		canary(), canary(), canary(), canary(), canary(), canary(), canary())
	agent := fmt.Sprintf(`description: [%[1]s]
capabilities:
  - {kind: mcp, server: s1, token: %[2]s, include: %[3]s}
  - {kind: sql, source: q, query: %[4]s}
policies:
  tool_timeout_ms: %[5]s
  approval: %[6]s
  rules:
    - {when: 'tool.destructive', effect: %[7]s}
`, canary(), canary(), canary(), canary(), canary(), canary(), canary())

	dir := t.TempDir()
	write := func(name, data string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("config/api.yaml", api)
	write("agents/a/agent.yaml", agent)
	envCanary := canary()

	leak := regexp.MustCompile(`sk-canary-\d+`)
	for _, args := range [][]string{
		{"check"}, {"check", "--format", "json"}, {"plan"}, {"plan", "--format", "json"},
	} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			e := &invocation{stdout: &stdout, stderr: &stderr, g: defaultGlobals(), environ: []string{
				"HEDDLE_AI__MCP_SERVERS__S1__HEADERS_REF=" + envCanary,
			}}
			full := append([]string{"--config", filepath.Join(dir, "config/api.yaml"), "--agents", filepath.Join(dir, "agents")}, args...)
			code := mainEnv(e, full)
			if code != ExitFail {
				t.Errorf("exit %d, want %d", code, ExitFail)
			}
			out := stdout.String() + stderr.String()
			if got := strings.Count(out, "\n"); got < 30 {
				t.Errorf("only %d lines of diagnostics; the canaries did not reach the checks:\n%s", got, out)
			}
			if m := leak.FindAllString(out, -1); m != nil {
				t.Errorf("output repeats %d canaries:\n%s", len(m), out)
			}
		})
	}
}
