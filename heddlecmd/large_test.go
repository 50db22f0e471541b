package heddlecmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckLargeDeployment runs heddle check on 200 agents × 50 servers
// written to disk: it completes, cleanly, with every agent counted.
func TestCheckLargeDeployment(t *testing.T) {
	dir := t.TempDir()
	var api strings.Builder
	api.WriteString("ai:\n  mcp_servers:\n")
	for s := range 50 {
		fmt.Fprintf(&api, "    srv%02d:\n      url: https://srv%02d.example.com/mcp\n      auth: {kind: bearer, token_ref: ${secrets:/heddle/srv%02d/token}}\n", s, s, s)
	}
	write := func(name, data string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("config/api.yaml", api.String())
	for a := range 200 {
		var b strings.Builder
		b.WriteString("capabilities:\n")
		for g := range 5 {
			fmt.Fprintf(&b, "  - {kind: mcp, server: srv%02d, include: [\"search_*\"]}\n", (a+g*11)%50)
		}
		b.WriteString("policies:\n  rules:\n    - {when: 'tool.destructive && !(\"sre\" in caller.roles)', effect: deny}\n")
		write(fmt.Sprintf("agents/agent%03d/agent.yaml", a), b.String())
	}
	var stdout, stderr bytes.Buffer
	e := &invocation{stdout: &stdout, stderr: &stderr, g: defaultGlobals()}
	code := mainEnv(e, []string{"--config", filepath.Join(dir, "config/api.yaml"), "--agents", filepath.Join(dir, "agents"), "check"})
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "ok: 200 agents, 50 MCP servers") {
		t.Fatalf("stdout: %s", stdout.String())
	}
}
