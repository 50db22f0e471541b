package a2alive_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// echoDir holds the A2A echo agent built on npm's @a2a-js/sdk: a peer
// nobody here wrote. Install it with `npm ci --prefix integration/a2a-echo`.
var echoDir = filepath.Join("..", "..", "..", "integration", "a2a-echo")

// needEchoAgent skips the test, with the reason, when node or the echo
// agent's packages are missing — unless CI=true, where they must be there.
func needEchoAgent(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(echoDir, "node_modules", "@a2a-js", "sdk", "package.json"))
	}
	if err != nil {
		msg := "the A2A echo agent needs node and `npm ci --prefix integration/a2a-echo`: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node
}

// startEchoAgent starts the echo agent on a free loopback port and returns
// its URL and a function that stops it (also run at cleanup).
func startEchoAgent(t *testing.T, token string) (string, func()) {
	t.Helper()
	node := needEchoAgent(t)
	cmd := exec.Command(node, "server.mjs")
	cmd.Dir = echoDir
	cmd.Env = append(os.Environ(), "PORT=0", "ECHO_TOKEN="+token)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the echo agent: %v", err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				urls <- u
			}
		}
	}()
	select {
	case u := <-urls:
		return u, stop
	case <-time.After(20 * time.Second):
		stop()
		t.Fatalf("the echo agent did not start:\n%s", stderr.String())
	}
	return "", nil
}

// TestEchoAgent reaches the @a2a-js/sdk echo agent through an a2a grant,
// with a bearer token: its card, a message answer, a task answer, a task
// polled to completion, and TOOL_UNAVAILABLE once it is gone.
func TestEchoAgent(t *testing.T) {
	const token = "echo-token-for-tests"
	url, stop := startEchoAgent(t, token)
	t.Setenv("HEDDLE_TEST_A2A_TOKEN", token)
	rt, ts := open(t, api("echo", url, "      auth: {kind: bearer, token_ref: '${env:HEDDLE_TEST_A2A_TOKEN}'}\n"), "")

	tools, err := ts.Tools(context.Background())
	if err != nil || len(tools) != 1 || tools[0].Name != "echo" || !strings.Contains(tools[0].Description, "Echoes the message it is sent.") {
		t.Fatalf("tools = %+v, %v", tools, err)
	}
	for msg, want := range map[string]string{
		"hello":       "echo: hello",
		"task: hi":    "echo: hi",
		"slow: there": "echo: there",
	} {
		res := call(t, ts, msg)
		if res.IsError || text(res) != want {
			t.Errorf("%q: %q (isError %v), want %q", msg, text(res), res.IsError, want)
		}
	}
	if d := rt.Health().Dependencies[0]; d.State != driver.StateReady || d.Kind != "a2a" {
		t.Errorf("health: %+v", d)
	}

	stop()
	if res := call(t, ts, "hello"); runtime.RefusalCode(res) != diag.ToolUnavailable {
		t.Errorf("after the agent stopped: %v %q, want TOOL_UNAVAILABLE", res, text(res))
	}
}
