package heddlecmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// jsonCodes returns every code an output of --format json carries where
// it reports a failure — {"error": {"code"}}, each of check's
// {"diagnostics": [{"code"}]}, a refusal's {"_meta": {"code"}} — and fails
// the test when one of them is empty or the output is not JSON.
func jsonCodes(t *testing.T, out []byte) []diag.Code {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	var codes []diag.Code
	add := func(where string, code any) {
		s, _ := code.(string)
		if s == "" {
			t.Errorf("%s has no code: %s", where, out)
		}
		codes = append(codes, diag.Code(s))
	}
	if e, ok := v["error"].(map[string]any); ok {
		add("the error", e["code"])
	}
	if ds, ok := v["diagnostics"].([]any); ok {
		for _, d := range ds {
			add("a diagnostic", d.(map[string]any)["code"])
		}
	}
	if v["isError"] == true {
		meta, _ := v["_meta"].(map[string]any)
		add("a refusal", meta["code"])
	}
	if len(codes) == 0 {
		t.Fatalf("the output reports no failure: %s", out)
	}
	return codes
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEveryJSONErrorCoded walks the command's error paths with --format
// json, each on a small configuration in its own directory (the working
// directory, so that the default heddle.lock is the directory's), and
// checks that every failure printed carries a code, and the one expected.
func TestEveryJSONErrorCoded(t *testing.T) {
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer unauthorized.Close()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	server := func(spec string) string { return "ai:\n  mcp_servers:\n    srv: " + spec + "\n" }
	stdio := server(fmt.Sprintf("{transport: stdio, command: %q}", testmcpBin))
	grant := map[string]string{"agents/a/agent.yaml": "capabilities: [{kind: mcp, server: srv}]\npolicies: {denied_tools: [add]}\n"}
	empty := map[string]string{"config/api.yaml": "ai: {}\n", "agents/a/agent.yaml": "capabilities: []\n"}
	with := func(api string, more map[string]string) map[string]string {
		files := map[string]string{"config/api.yaml": api}
		for k, v := range grant {
			files[k] = v
		}
		for k, v := range more {
			files[k] = v
		}
		return files
	}
	tests := []struct {
		name  string
		files map[string]string
		args  []string
		want  diag.Code
	}{
		{"check, a parse error", map[string]string{"config/api.yaml": "ai: [\n", "agents/a/agent.yaml": "capabilities: []\n"}, []string{"check"}, diag.ConfigParse},
		{"plan, an unknown key", map[string]string{"config/api.yaml": "ai: {nope: 1}\n", "agents/a/agent.yaml": "capabilities: []\n"}, []string{"plan"}, diag.ConfigKeyUnknown},
		{"check, --env without its overlay", empty, []string{"check", "--env", "nosuch"}, diag.ConfigParse},
		{"tools, --env without its overlay", empty, []string{"tools", "a", "--env", "nosuch"}, diag.ConfigParse},
		{"tools, a compile error", with(server("{url: ftp://x}"), nil), []string{"tools", "a"}, diag.MCPURLInvalid},
		{"tools, an unknown agent", empty, []string{"tools", "nobody"}, diag.AgentUnknown},
		{"tools, a missing command", with(server("{transport: stdio, command: bin/absent-server}"), nil), []string{"tools", "a"}, diag.MCPServerUnreachable},
		{"tools, a refused connection", with(server(fmt.Sprintf("{url: %q}", closedURL(t))), nil), []string{"tools", "a"}, diag.MCPServerUnreachable},
		{"tools, a 401", with(server(fmt.Sprintf("{url: %q}", unauthorized.URL+"/mcp")), nil), []string{"tools", "a"}, diag.MCPAuthRejected},
		{"tools, an unresolved secret", with(server(fmt.Sprintf("{url: %q, headers_ref: \"${env:HEDDLE_TEST_UNSET_KEY}\"}", unauthorized.URL+"/mcp")), nil), []string{"tools", "a"}, diag.SecretUnresolved},
		{"tools, --lock naming no file", with(stdio, nil), []string{"tools", "a", "--lock", "nope.lock"}, diag.LockInvalid},
		{"tools, --lock naming a file that is no lock", with(stdio, map[string]string{"other.lock": "not json\n"}), []string{"tools", "a", "--lock", "other.lock"}, diag.LockInvalid},
		{"tools, a default heddle.lock that is no lock", with(stdio, map[string]string{"heddle.lock": "{\"version\": 99}\n"}), []string{"tools", "a"}, diag.LockInvalid},
		{"tools, a changed tool", with(stdio, map[string]string{"heddle.lock": changedEchoLock(t)}), []string{"tools", "a"}, diag.ToolDefinitionChanged},
		{"call, an unknown tool", with(stdio, nil), []string{"call", "a", "no_such_tool"}, diag.ToolUnknown},
		{"call, a denied tool", with(stdio, nil), []string{"call", "a", "add", "--args", `{"a": 1, "b": 2}`}, diag.ToolDenied},
		{"call, arguments against the schema", with(stdio, nil), []string{"call", "a", "echo", "--args", `{"text": 5}`}, diag.ToolArgsInvalid},
		{"health, a required server down", with(server("{transport: stdio, command: bin/absent-server}"), nil), []string{"health"}, diag.MCPServerUnreachable},
		{"lock, into a directory that does not exist", with(stdio, nil), []string{"lock", "--lock", "no/such/dir/heddle.lock"}, diag.LockInvalid},
		{"serve, a busy address", empty, []string{"serve", "--listen", busy.Addr().String()}, diag.ListenFailed},
		{"serve, an address that is no address", empty, []string{"serve", "--listen", "nowhere"}, diag.ListenFailed},
		{"serve, a busy serve.probes.listen", map[string]string{"config/api.yaml": "serve: {probes: {listen: " + busy.Addr().String() + "}}\nai: {}\n", "agents/a/agent.yaml": "capabilities: []\n"},
			[]string{"serve", "--listen", "127.0.0.1:0"}, diag.ListenFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			t.Chdir(dir)
			var stdout, stderr bytes.Buffer
			code := Run(append(tc.args, "--format", "json"), &stdout, &stderr, Options{})
			if code != ExitFail {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, ExitFail, stderr.String())
			}
			codes := jsonCodes(t, stdout.Bytes())
			if !strings.Contains(fmt.Sprint(codes), string(tc.want)) {
				t.Errorf("codes %v, want %s", codes, tc.want)
			}
		})
	}
}

// closedURL is an http URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String() + "/mcp"
}

// TestMissingDefaultLockIsFine: without --lock, a heddle.lock that does
// not exist is no error.
func TestMissingDefaultLockIsFine(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"config/api.yaml": "ai: {}\n", "agents/a/agent.yaml": "capabilities: []\n"})
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"tools", "a", "--format", "json"}, &stdout, &stderr, Options{}); code != ExitOK {
		t.Errorf("exit %d, want %d: %s%s", code, ExitOK, stdout.String(), stderr.String())
	}
}

// changedEchoLock is a lock pinning a tool echo that says something else
// than the test server's.
func changedEchoLock(t *testing.T) string {
	l := &runtime.Lock{Version: runtime.LockVersion, Kinds: map[string]driver.Pins{"mcp": {"srv": {Tools: map[string]driver.Pin{
		"echo": driver.PinOf(&mcp.Tool{Name: "echo", Description: "something else", InputSchema: map[string]any{"type": "object"}}),
	}}}}}
	b, err := l.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
