package faults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/builtin"
	"github.com/heddlehq/heddle/diag"
)

// TestSurfaces drives every surface of the stock heddle binary through the
// matrix's faults — the commands tools, call, health and mcp (the facade
// over stdio), and heddle serve's probes, invoke API and MCP facade — and
// asserts that every failure, of a
// command, a request or a call, carries a code from the catalogue. Each
// fault is set up as its cells set it up; what follows start-up (a
// restart, a crash) is the cells' to assert.
func TestSurfaces(t *testing.T) {
	eachCell(t, nil, (*cell).surfaces)
}

// surfaces runs the commands and serve in the cell's directory.
func (c *cell) surfaces() {
	t := c.t
	if c.f.cellsOnly != "" {
		t.Skip(c.f.cellsOnly)
	}
	dep := c.f.dep(c)
	if c.httpT != nil {
		t.Skip("the fault needs the runtime's HTTP transport, which only the library takes")
	}
	writeFile(t, filepath.Join(c.dir, "config/api.yaml"), "serve:\n  auth: {kind: none}\n"+c.api(dep))
	writeFile(t, filepath.Join(c.dir, "agents/a/agent.yaml"), c.agent())
	want := c.f.outcome(c.mode, c.tr)
	args, _ := json.Marshal(c.args())

	// The commands, each a process of its own, run side by side with
	// serve: what they share is the dependency, as the workers of a
	// fleet share it.
	var wg sync.WaitGroup
	for _, cmd := range [][]string{
		{"call", "a", c.tool(), "--args", string(args)},
		{"call", "a", "good.echo", "--args", `{"text":"sibling"}`},
		{"tools", "a"},
		{"health"},
	} {
		wg.Go(func() {
			out, code := c.heddle(cmd...)
			c.noSecret("heddle "+cmd[0], out)
			switch {
			case want.fails && (code != 1 || !strings.Contains(out, string(want.code))):
				t.Errorf("heddle %s: exit %d, want 1 with %s:\n%s", cmd[0], code, want.code, out)
			case code != 0:
				c.coded("heddle "+strings.Join(cmd, " "), out)
			}
		})
	}
	wg.Go(func() { c.stdioFacade(want) })
	c.serve(want)
	wg.Wait()
}

// stdioFacade lists and calls x's tool through heddle mcp, the facade over
// stdio, with go-sdk's client as the MCP host that started it. A start-up
// that fails must still be told the host, with its code.
func (c *cell) stdioFacade(want outcome) {
	cmd := exec.Command(heddleBin, "mcp", "a")
	cmd.Dir = c.dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	c.facadeOver(&mcp.CommandTransport{Command: cmd}, "heddle mcp", want)
	c.noSecret("heddle mcp", stderr.String())
	if want.fails && !strings.Contains(stderr.String(), string(want.code)) {
		c.t.Errorf("heddle mcp: stderr does not name %s:\n%s", want.code, stderr.String())
	}
}

// heddle runs the stock binary with args in the cell's directory, bounded
// in time, and returns its output and exit status.
func (c *cell) heddle(args ...string) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), c.budget()+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, heddleBin, args...)
	cmd.Dir = c.dir
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		c.t.Fatalf("heddle %s: %v", args[0], err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// serve runs heddle serve and asserts its probes, invoke API and facade.
func (c *cell) serve(want outcome) {
	t := c.t
	cmd := exec.Command(heddleBin, "serve", "--listen", "127.0.0.1:0")
	cmd.Dir = c.dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		c.noSecret("heddle serve's log", stderr.String())
	})
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	go func() {
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(exited)
	}()
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "heddle: serving on ")
	if want.fails {
		<-exited
		c.noSecret("heddle serve", stderr.String())
		if ok || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(stderr.String(), string(want.code)) {
			t.Errorf("heddle serve: %q, exit %d, want exit 1 with %s:\n%s", line, cmd.ProcessState.ExitCode(), want.code, stderr.String())
		}
		return
	}
	if !ok {
		<-exited
		t.Fatalf("heddle serve printed %q:\n%s", line, stderr.String())
	}
	args, _ := json.Marshal(c.args())
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/livez", ""},
		{"GET", "/readyz", ""},
		{"GET", "/v1/agents/a/tools", ""},
		{"POST", "/v1/agents/a/tools/" + c.tool(), string(args)},
		{"POST", "/v1/agents/a/tools/good.echo", `{"text":"sibling"}`},
	} {
		status, body := request(t, r.method, base+r.path, r.body)
		c.noSecret(r.method+" "+r.path, body)
		if status >= 300 || strings.Contains(body, `"isError":true`) {
			c.coded(r.method+" "+r.path, body)
		}
		if r.path == "/v1/agents/a/tools/good.echo" && (status != 200 || !strings.Contains(body, "sibling")) {
			t.Errorf("the sibling over the invoke API: %d %s", status, clip(body))
		}
	}
	c.facade(base + "/mcp/a")
}

// facade lists and calls x's tool through the MCP facade of heddle serve
// with go-sdk's client, as an MCP host does.
func (c *cell) facade(url string) {
	c.facadeOver(&mcp.StreamableClientTransport{Endpoint: url}, "the facade", outcome{})
}

// facadeOver connects go-sdk's client over t, then lists and calls x's
// tool. A connection that fails is asserted to carry want's code when
// start-up fails, and is an error otherwise.
func (c *cell) facadeOver(t mcp.Transport, what string, want outcome) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "faults", Version: "1"}, nil)
	sess, err := client.Connect(ctx, t, nil)
	switch {
	case want.fails && err == nil:
		sess.Close()
		c.t.Errorf("%s: connected, want start-up to fail with %s", what, want.code)
		return
	case want.fails:
		return
	case err != nil:
		c.t.Errorf("%s: %v", what, err)
		return
	}
	defer sess.Close()
	if _, err := sess.ListTools(ctx, nil); err != nil {
		c.coded(what+" tools/list", err.Error())
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: c.tool(), Arguments: c.args()})
	switch {
	case err != nil:
		c.coded(what+" tools/call", err.Error())
	case res.IsError:
		b, _ := json.Marshal(res)
		c.coded(what+" tools/call", string(b))
		c.noSecret(what+" tools/call", string(b))
	}
}

// noSecret asserts that out holds none of the secrets the cell gave heddle.
func (c *cell) noSecret(what, out string) {
	c.t.Helper()
	if strings.Contains(out, canary) {
		c.t.Errorf("%s shows a secret:\n%s", what, clip(out))
	}
}

// codeRE matches what looks like a code.
var codeRE = regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b`)

// catalogue is that of the stock binary's kinds: the core's codes and each
// built-in kind's own.
var catalogue = builtin.Default().Grants()

// coded asserts that the failure out of what names a code of the
// catalogue.
func (c *cell) coded(what, out string) {
	c.t.Helper()
	for _, m := range codeRE.FindAllString(out, -1) {
		if _, ok := catalogue.Entry(diag.Code(m)); ok {
			return
		}
	}
	c.t.Errorf("%s failed without a code:\n%s", what, clip(out))
}

func request(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: 30 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return 0, ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(b)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
