package plugin_test

import (
	"bufio"
	"fmt"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle/examples/auth-agent-session/sessiontest"
	"github.com/heddlehq/heddle/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startExampleAgent runs the example remote agent in a process of its own
// on 127.0.0.1 and returns its base URL.
func startExampleAgent(t *testing.T) *url.URL {
	t.Helper()
	cmd := exec.Command(exampleAgentBin, "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stderr).ReadString('\n')
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "heddle-example-agent: listening on ")
	if err != nil || !ok {
		t.Fatalf("the example agent printed %q (%v)", line, err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestA2AAgentWithPlugin: a remote agent (kind a2a) authenticated by the
// example plugin starts and answers: the agent, in a process of its own,
// sits behind the session endpoint's token check, which lets through only
// tokens the plugin obtained from that endpoint. The plugin's strategy is
// built from the plan's auth_plugins, as an MCP server's is.
func TestA2AAgentWithPlugin(t *testing.T) {
	agent := startExampleAgent(t)
	srv := sessiontest.Start(sessiontest.Options{
		TTL:      time.Minute,
		Secrets:  map[string]string{secretPath: bootstrap},
		Resource: httputil.NewSingleHostReverseProxy(agent),
	})
	t.Cleanup(srv.Close)
	api := fmt.Sprintf(`
ai:
  startup_timeout_ms: 15000
  auth_plugins:
    agent-session: {command: %s, sha256: %q}
  a2a_agents:
    triage:
      url: %s
      auth:
        kind: agent-session
        session_url: %s
        secret_path: %s
        bootstrap_ref: ${env:AGENT_BOOTSTRAP}
`, pluginBin, pluginSum, srv.URL, srv.SessionURL(), secretPath)
	p, err := compileAPI(api, map[string]string{"ops": `capabilities: [{kind: a2a, agent: triage}]`})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.Open(t.Context(), p, runtime.Options{Secrets: testSecrets()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ts, err := rt.Toolset("ops")
	if err != nil {
		t.Fatal(err)
	}
	res, err := ts.Call(t.Context(), "triage", map[string]any{"message": "Disk full on db-replica-2"})
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError || !strings.Contains(text, "severity 4") {
		t.Errorf("the agent's answer: %q (isError %v)", text, res.IsError)
	}
	if srv.Mints() != 1 || srv.Accepted() < 2 || srv.Refused() != 0 {
		t.Errorf("session endpoint: %d tokens minted, %d requests accepted, %d refused; want 1, at least 2 (card and call), 0",
			srv.Mints(), srv.Accepted(), srv.Refused())
	}
	checkNoSecrets(t, srv, "the answer", text)
}
