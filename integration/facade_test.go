package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/modtest"
	"github.com/heddlehq/heddle/internal/syncbuf"
)

// facadeReport is what integration/facade/host.mjs prints.
type facadeReport struct {
	Server      string                     `json:"server"`
	Tools       []string                   `json:"tools"`
	Annotations map[string]json.RawMessage `json:"annotations"`
	Echo        struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"echo"`
	Declined, Accepted, Fresh struct {
		IsError bool   `json:"isError"`
		Code    string `json:"code"`
		Text    string `json:"text"`
	}
	ListChanged  bool     `json:"listChanged"`
	ToolsAfter   []string `json:"toolsAfter"`
	Elicitations []struct {
		Message string `json:"message"`
		Action  string `json:"action"`
	} `json:"elicitations"`
}

// TestFacadeTypeScriptHost: the TypeScript SDK's client, as a host, uses
// heddle's MCP facade over stdio (heddle mcp) and Streamable HTTP (heddle
// serve's /mcp/{agent}): it lists the agent's tools and calls them, is
// asked by elicitation to approve the destructive add_tool — its decline
// refuses the call with TOOL_APPROVAL_REQUIRED, its accept runs it —, and
// receives notifications/tools/list_changed when add_tool has changed the
// upstream server's tools, after which it lists and calls the new tool.
func TestFacadeTypeScriptHost(t *testing.T) {
	node := Need(t, "node")
	Need(t, "typescript-sdk")
	root := modtest.Root(t)
	bin := t.TempDir()
	heddleBin, testmcpBin := filepath.Join(bin, "heddle"), filepath.Join(bin, "heddle-testmcp")
	for out, pkg := range map[string]string{heddleBin: "./cmd/heddle", testmcpBin: "./cmd/heddle-testmcp"} {
		build := exec.Command("go", "build", "-o", out, pkg)
		build.Dir = root
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", pkg, err, b)
		}
	}
	dir := t.TempDir()
	modtest.WriteFile(t, filepath.Join(dir, "config/api.yaml"), `
ai:
  mcp_servers:
    srv: {transport: stdio, command: `+testmcpBin+`, args: [--destructive, add_tool]}
serve:
  auth: {kind: trusted_headers, proxies: [127.0.0.1, "::1"]}
mcp:
  identity: {subject: local-user, roles: [developer]}
`)
	modtest.WriteFile(t, filepath.Join(dir, "agents/ops/agent.yaml"), "capabilities: [{kind: mcp, server: srv}]\npolicies: {approval: ask}\n")
	host, err := filepath.Abs("facade/host.mjs")
	if err != nil {
		t.Fatal(err)
	}
	runHost := func(t *testing.T, args ...string) facadeReport {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{host}, args...)...)
		cmd.Dir = dir
		var stderr syncbuf.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("host.mjs %s: %v\nstderr:\n%s", args[0], err, stderr.String())
		}
		var r facadeReport
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("host.mjs printed %q: %v\nstderr:\n%s", out, err, stderr.String())
		}
		return r
	}
	check := func(t *testing.T, r facadeReport) {
		t.Helper()
		if r.Server != "heddle/ops" || !slices.Contains(r.Tools, "echo") || !slices.Contains(r.Tools, "add_tool") || slices.Contains(r.Tools, "fresh") {
			t.Errorf("server %q lists %v: want heddle/ops with echo and add_tool, without fresh", r.Server, r.Tools)
		}
		if a := string(r.Annotations["add_tool"]); !strings.Contains(a, `"destructiveHint":true`) {
			t.Errorf("add_tool's annotations %s: want destructiveHint true", a)
		}
		if r.Echo.IsError || r.Echo.Text != "from typescript" {
			t.Errorf("echo: %+v", r.Echo)
		}
		if !r.Declined.IsError || r.Declined.Code != string(diag.ToolApprovalRequired) {
			t.Errorf("add_tool declined: %+v, want a TOOL_APPROVAL_REQUIRED refusal", r.Declined)
		}
		if r.Accepted.IsError {
			t.Errorf("add_tool accepted: %+v, want it to run", r.Accepted)
		}
		if len(r.Elicitations) != 2 || !strings.Contains(r.Elicitations[0].Message, "add_tool") {
			t.Errorf("elicitations %+v: want two, naming add_tool", r.Elicitations)
		}
		if !r.ListChanged {
			t.Error("no notifications/tools/list_changed within 10 s of the upstream change")
		}
		if !slices.Contains(r.ToolsAfter, "fresh") || r.Fresh.IsError {
			t.Errorf("after list_changed: tools %v, fresh %+v: want fresh listed and callable", r.ToolsAfter, r.Fresh)
		}
	}

	t.Run("stdio", func(t *testing.T) {
		check(t, runHost(t, "stdio", heddleBin, "mcp", "ops", "--config", filepath.Join(dir, "config/api.yaml"), "--agents", filepath.Join(dir, "agents")))
	})
	t.Run("http", func(t *testing.T) {
		base := startHeddleServe(t, heddleBin, dir)
		check(t, runHost(t, "http", base+"/mcp/ops", "alice"))
	})
}

// startHeddleServe runs heddle serve in dir on 127.0.0.1 and returns its
// base URL; SIGTERM ends it when the test ends, and it must exit 0.
func startHeddleServe(t *testing.T, heddleBin, dir string) string {
	t.Helper()
	cmd := exec.Command(heddleBin, "serve", "--listen", "127.0.0.1:0", "--grace", "2s")
	cmd.Dir = dir
	return startListening(t, "heddle serve", cmd, "heddle: serving on ", true)
}

// startListening starts cmd in a process group of its own and returns what
// follows prefix on the first line it prints on standard output (a server's
// base URL), within 30 s. When the test ends it is sent SIGTERM and given
// 15 s before its group is killed; strict, it must then have exited 0. Its
// standard error is shown when the test failed.
func startListening(t *testing.T, name string, cmd *exec.Cmd, prefix string, strict bool) string {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil && strict {
				t.Errorf("%s: %v", name, err)
			}
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			t.Errorf("%s did not end within 15 s of SIGTERM", name)
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, stderr.String())
		}
	})
	select {
	case line, ok := <-lines:
		rest, found := strings.CutPrefix(line, prefix)
		if !ok || !found {
			t.Fatalf("%s printed %q\nstderr:\n%s", name, line, stderr.String())
		}
		return rest
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not listen within 30 s\nstderr:\n%s", name, stderr.String())
	}
	return ""
}
