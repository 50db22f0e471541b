package heddlecmd

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hangConfig is the configuration of a worker with one good stdio server
// and one, hangs, whose process runs but never answers its handshake until
// the file answer appears in dir (then it is the test server).
func hangConfig(t *testing.T, dir, mode string) {
	t.Helper()
	script := filepath.Join(dir, "hangs.sh")
	body := "#!/bin/sh\nif [ -e " + strconv.Quote(filepath.Join(dir, "answer")) + " ]; then exec " + strconv.Quote(testmcpBin) + "; fi\nexec sleep 600\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{
		"config/api.yaml": "serve:\n  auth: {kind: none}\nai:\n  startup_timeout_ms: 3000\n  remote_clients: " + mode + "\n  mcp_servers:\n" +
			"    good: {transport: stdio, command: " + strconv.Quote(testmcpBin) + "}\n" +
			"    hangs: {transport: stdio, command: " + strconv.Quote(script) + "}\n",
		"agents/probe/agent.yaml": "capabilities:\n  - {kind: mcp, server: good, include: [echo]}\n  - {kind: mcp, server: hangs, include: [add]}\n",
	})
}

// TestOptionalServerHangsHandshake: under remote_clients: optional, a stdio
// server whose process runs but never answers its handshake does not stop
// the worker. heddle serve listens within startup_timeout_ms plus a second,
// /readyz is 200 and reports hangs down with its code, the good server's
// echo answers, and hangs' tool answers once hangs does. The one-shot
// commands finish within the same bound.
func TestOptionalServerHangsHandshake(t *testing.T) {
	dir := t.TempDir()
	hangConfig(t, dir, "optional")
	// The promise is startup_timeout_ms (3 s) plus a second, counted inside
	// the worker; measured from outside it also holds the process's own
	// start, up to a second more under -race on a loaded machine. Waiting
	// out the budget twice (6 s), the regression this test guards against,
	// stays beyond it.
	const bound = 5 * time.Second

	start := time.Now()
	w := startWorkerIn(t, dir)
	if d := time.Since(start); d > bound {
		t.Errorf("serve listened after %v, want within %v", d, bound)
	}
	res, err := http.Get(w.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var ready struct {
		Ready        bool `json:"ready"`
		Dependencies []struct {
			Name  string `json:"name"`
			State string `json:"state"`
			Code  string `json:"code"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &ready); err != nil {
		t.Fatalf("/readyz: %v: %s", err, b)
	}
	states := map[string]string{}
	for _, d := range ready.Dependencies {
		states[d.Name] = d.State + " " + d.Code
	}
	if res.StatusCode != 200 || !ready.Ready || states["good"] != "ready " || states["hangs"] != "down MCP_SERVER_UNREACHABLE" {
		t.Errorf("/readyz: %d %s", res.StatusCode, b)
	}
	if got := w.post(t, "/v1/agents/probe/tools/echo", `{"text":"hi"}`); !strings.Contains(got, "200 ") || !strings.Contains(got, "hi") {
		t.Errorf("echo while hangs hangs: %s", got)
	}
	if got := w.post(t, "/v1/agents/probe/tools/hangs.add", `{"a":1,"b":2}`); !strings.Contains(got, "TOOL_UNAVAILABLE") {
		t.Errorf("hangs' tool while it hangs: %s", got)
	}

	// hangs answers from its next process on: a call brings it back.
	if err := os.WriteFile(filepath.Join(dir, "answer"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := w.post(t, "/v1/agents/probe/tools/hangs.add", `{"a":1,"b":2}`)
		if strings.Contains(got, `"sum":3`) && strings.Contains(got, `"isError":false`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hangs' tool once it answers: %s", got)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The one-shot commands: the same bound, and the good server's tools.
	_ = os.Remove(filepath.Join(dir, "answer"))
	for _, args := range [][]string{
		{"tools", "probe"},
		{"call", "probe", "echo", "--args", `{"text":"hi"}`},
		{"health"},
	} {
		start := time.Now()
		cmd := exec.Command("heddle", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("heddle %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if d := time.Since(start); d > bound {
			t.Errorf("heddle %s took %v, want within %v", strings.Join(args, " "), d, bound)
		}
	}
}

// TestRequiredServerHangsHandshake: under remote_clients: required, the
// same worker fails start-up within the budget, naming hangs and its code.
func TestRequiredServerHangsHandshake(t *testing.T) {
	dir := t.TempDir()
	hangConfig(t, dir, "required")
	// The promise is startup_timeout_ms (3 s), counted inside the worker;
	// measured from outside it also holds the process's own start and exit
	// (2.7 s in all on an idle machine, 3.52 s seen under make test's load).
	// Waiting out the budget twice (6 s), the regression this guards
	// against, stays beyond it.
	const bound = 4500 * time.Millisecond
	for _, args := range [][]string{{"tools", "probe"}, {"serve", "--listen", "127.0.0.1:0"}} {
		start := time.Now()
		cmd := exec.Command("heddle", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != ExitFail {
			t.Errorf("heddle %s: %v, want exit %d\n%s", args[0], err, ExitFail, out)
		}
		if d := time.Since(start); d > bound {
			t.Errorf("heddle %s failed after %v, want within the 3 s budget (%v from outside)", args[0], d, bound)
		}
		if !strings.Contains(string(out), "MCP_SERVER_UNREACHABLE") || !strings.Contains(string(out), "hangs") || strings.Contains(string(out), "good") {
			t.Errorf("heddle %s does not name hangs alone with its code:\n%s", args[0], out)
		}
	}
}

// post posts body to the worker's path and returns the status and body.
func (w *worker) post(t *testing.T, path, body string) string {
	t.Helper()
	res, err := http.Post(w.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		return "no answer: " + err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return strconv.Itoa(res.StatusCode) + " " + string(b)
}
