package heddlecmd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/builtin"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
)

// TestMCPCommand runs `heddle mcp` with a go-sdk client on its standard
// input and output: the agent's tools are listed, calls are made for the
// deployment's mcp.identity, who is not listed a tool the rules deny him
// whatever its arguments, a destructive tool needs approval (this host
// cannot elicit), logs go to stderr, and closing stdin ends the command
// with 0.
func TestMCPCommand(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"config/api.yaml": "ai:\n  mcp_servers:\n    srv: {transport: stdio, command: " + testmcpBin + ", args: [--destructive, \"add_tool,remove_tool\"]}\n" +
			"mcp:\n  identity: {subject: bob, roles: [dev]}\n",
		"agents/triage/agent.yaml": "capabilities: [{kind: mcp, server: srv, exclude: [sleep]}]\n" +
			"policies:\n  rules:\n    - {when: 'tool.original_name == \"remove_tool\" && !(\"sre\" in caller.roles)', effect: deny}\n",
	})
	t.Chdir(dir)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	exit := make(chan int, 1)
	go func() {
		kinds := builtin.Default()
		e := &invocation{stdout: outW, stderr: &stderr, stdin: inR, g: defaultGlobals(), kinds: kinds.Grants(), set: kinds}
		exit <- mainEnv(e, []string{"mcp", "triage", "--log-level", "info"})
		outW.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	if got := cs.InitializeResult().ServerInfo.Name; got != "heddle/triage" {
		t.Errorf("server name %q", got)
	}
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if !strings.Contains(","+strings.Join(names, ",")+",", ",echo,") || strings.Contains(strings.Join(names, ","), "sleep") ||
		strings.Contains(strings.Join(names, ","), "remove_tool") {
		t.Errorf("tools %v: want echo, and neither sleep nor remove_tool (denied to bob whatever its arguments)", names)
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	if res := call("echo", map[string]any{"text": "hello over mcp"}); res.IsError {
		t.Errorf("echo: %+v", res)
	}
	if res := call("remove_tool", map[string]any{"name": "echo"}); runtime.RefusalCode(res) != diag.ToolUnknown {
		t.Errorf("remove_tool as bob: code %q, want TOOL_UNKNOWN", runtime.RefusalCode(res))
	}
	// The host speaks 2026-07-28 (go-sdk's own choice) and declared no
	// elicitation: the call lacks a capability it needs, MCP's -32021.
	var rpcErr *jsonrpc.Error
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_tool", Arguments: map[string]any{"name": "made"}}); !errors.As(err, &rpcErr) ||
		rpcErr.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(string(rpcErr.Data), string(diag.ToolApprovalRequired)) {
		t.Errorf("add_tool without elicitation: %v, want -32021 with TOOL_APPROVAL_REQUIRED", err)
	}
	_ = cs.Close() // closes the command's stdin
	select {
	case code := <-exit:
		if code != ExitOK {
			t.Errorf("heddle mcp exited %d, want 0; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("heddle mcp did not end within 15 s of its stdin closing")
	}
	if !strings.Contains(stderr.String(), "level=INFO") {
		t.Errorf("no log on stderr:\n%s", stderr.String())
	}
}
