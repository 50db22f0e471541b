package heddlecmd

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
)

// failingMCP is a deployment heddle mcp cannot open for agent a, and the
// code it fails with.
var failingMCP = []struct {
	name  string
	agent string
	code  diag.Code
}{
	{"server that cannot start", "a", diag.MCPServerUnreachable},
	{"unknown agent", "nosuch", diag.AgentUnknown},
}

// mcpFailureDir writes a deployment whose one agent, a, grants a required
// stdio server whose command does not exist.
func mcpFailureDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"config/api.yaml":     "ai:\n  mcp_servers:\n    x: {transport: stdio, command: heddle-no-such-command}\n",
		"agents/a/agent.yaml": "capabilities: [{kind: mcp, server: x}]\n",
	})
	return dir
}

// TestMCPStartupFailureReachesHost starts heddle mcp (the test binary, see
// TestMain) as go-sdk's client starts a stdio server: when it cannot open,
// Connect fails with the failure's code rather than a closed connection,
// and the command still exits 1 with the failure on stderr.
func TestMCPStartupFailureReachesHost(t *testing.T) {
	for _, tc := range failingMCP {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("heddle", "mcp", tc.agent)
			cmd.Dir = mcpFailureDir(t)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err == nil {
				cs.Close()
				t.Fatal("connect succeeded")
			}
			if !strings.Contains(err.Error(), string(tc.code)) {
				t.Errorf("connect: %v; want %s", err, tc.code)
			}
			if err := cmd.Wait(); cmd.ProcessState == nil {
				t.Fatalf("wait: %v", err)
			}
			if got := cmd.ProcessState.ExitCode(); got != ExitFail {
				t.Errorf("exit %d, want %d", got, ExitFail)
			}
			if !strings.Contains(stderr.String(), string(tc.code)) {
				t.Errorf("stderr does not name %s:\n%s", tc.code, stderr.String())
			}
		})
	}
}

// TestMCPStartupFailureResponse reads heddle mcp's answer to initialize on
// the wire: a JSON-RPC internal error (never heddle's code in the numeric
// field) for the request's id, the code leading the message and in data.
func TestMCPStartupFailureResponse(t *testing.T) {
	for _, tc := range failingMCP {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("heddle", "mcp", tc.agent)
			cmd.Dir = mcpFailureDir(t)
			cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":"init-1","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}` + "\n")
			out, err := cmd.Output()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != ExitFail {
				t.Fatalf("heddle mcp: %v, want exit %d", err, ExitFail)
			}
			var resp struct {
				JSONRPC string `json:"jsonrpc"`
				ID      any    `json:"id"`
				Error   struct {
					Code    int                  `json:"code"`
					Message string               `json:"message"`
					Data    map[string]diag.Code `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal(out, &resp); err != nil {
				t.Fatalf("stdout %q: %v", out, err)
			}
			if resp.JSONRPC != "2.0" || resp.ID != "init-1" || resp.Error.Code != -32603 {
				t.Errorf("response %+v: want jsonrpc 2.0, id init-1, code -32603", resp)
			}
			if !strings.HasPrefix(resp.Error.Message, string(tc.code)+": ") || resp.Error.Data["code"] != tc.code {
				t.Errorf("error %+v: want %s leading the message and in data", resp.Error, tc.code)
			}
		})
	}
}

// TestAnswerFailure: every request is answered with the failure, in turn
// (a host may probe before it initializes); notifications, responses and
// lines that are not JSON are not; a line over the limit ends the reading.
func TestAnswerFailure(t *testing.T) {
	fail := diag.New(diag.AgentUnknown, "no agent %q", "x")
	answer := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":"AGENT_UNKNOWN: no agent \"x\"","data":{"code":"AGENT_UNKNOWN"}}}` + "\n"
	}
	tooLong := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", requestLimit) + `"}}`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"discover then initialize", `{"jsonrpc":"2.0","id":1,"method":"server/discover"}` + "\n" + `{"jsonrpc":"2.0","id":"two","method":"initialize"}` + "\n", answer("1") + answer(`"two"`)},
		{"no newline at the end", `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, answer("7")},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n", ""},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"initialize"}` + "\n", ""},
		{"response", `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n", ""},
		{"not json", "hello\n" + `{"jsonrpc":"2.0","id":2,"method":"initialize"}` + "\n", answer("2")},
		{"too long", tooLong + "\n" + `{"jsonrpc":"2.0","id":2,"method":"initialize"}` + "\n", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			answerFailure(context.Background(), strings.NewReader(tc.in), &out, fail)
			if out.String() != tc.want {
				t.Errorf("answered\n%s\nwant\n%s", out.String(), tc.want)
			}
		})
	}
	t.Run("no request in time", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r, w := io.Pipe()
			var out strings.Builder
			start := time.Now()
			answerFailure(context.Background(), r, &out, fail)
			if waited := time.Since(start); waited != failureWait || out.Len() != 0 {
				t.Errorf("waited %v and answered %q; want %v and nothing", waited, out.String(), failureWait)
			}
			w.Close()
		})
	})
}
