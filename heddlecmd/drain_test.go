package heddlecmd

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/proctest"
)

// worker is a `heddle serve` process of the test binary (heddle on PATH,
// see TestMain), serving one agent, a, with the test server's tools over
// stdio.
type worker struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string
	exit chan error
}

// startWorker runs heddle serve in a directory of its own with the test
// server (or command, when not "") as the stdio server srv, and the extra
// arguments; it returns once the worker serves.
func startWorker(t *testing.T, command string, args ...string) *worker {
	t.Helper()
	dir := t.TempDir()
	if command == "" {
		command = testmcpBin
	}
	writeFiles(t, dir, map[string]string{
		"config/api.yaml":     "serve:\n  auth: {kind: none}\nai:\n  mcp_servers:\n    srv: {transport: stdio, command: " + strconv.Quote(command) + "}\n",
		"agents/a/agent.yaml": "capabilities: [{kind: mcp, server: srv}]\npolicies: {tool_timeout_ms: 600000}\n",
	})
	return startWorkerIn(t, dir, args...)
}

// startWorkerIn runs heddle serve in dir, whose configuration the caller
// wrote, with the extra arguments; it returns once the worker serves.
func startWorkerIn(t *testing.T, dir string, args ...string) *worker {
	t.Helper()
	cmd := exec.Command("heddle", append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &worker{t: t, cmd: cmd, exit: make(chan error, 1)}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-w.exit
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	go func() {
		_, _ = io.Copy(io.Discard, out)
		w.exit <- cmd.Wait()
	}()
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "heddle: serving on ")
	if err != nil || !ok {
		t.Fatalf("serve printed %q (%v)", line, err)
	}
	w.base = base
	return w
}

// call posts a call of the sleep tool of ms milliseconds and sends its
// status and code ("" for none) once answered.
func (w *worker) sleep(ms int) <-chan string {
	ch := make(chan string, 1)
	go func() {
		body := strings.NewReader(`{"ms": ` + strconv.Itoa(ms) + `}`)
		res, err := http.Post(w.base+"/v1/agents/a/tools/sleep", "application/json", body)
		if err != nil {
			ch <- "no answer: " + err.Error()
			return
		}
		defer res.Body.Close()
		var v struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.NewDecoder(res.Body).Decode(&v)
		ch <- strings.TrimSpace(strconv.Itoa(res.StatusCode) + " " + v.Error.Code)
	}()
	return ch
}

// signal sends sig to the worker.
func (w *worker) signal(sig syscall.Signal) {
	w.t.Helper()
	if err := w.cmd.Process.Signal(sig); err != nil {
		w.t.Fatal(err)
	}
}

// waitExit waits up to d for the worker to exit, and returns its status.
func (w *worker) waitExit(d time.Duration) int {
	w.t.Helper()
	select {
	case <-w.exit:
		w.exit <- nil // for the cleanup
		return w.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		w.t.Fatalf("serve did not exit within %v", d)
		return -1
	}
}

// TestServeDrain: on SIGTERM a call that ends within --grace is answered,
// one still running at --grace is answered 503 SHUTTING_DOWN, /readyz
// answers 503 SHUTTING_DOWN on a connection already open, serve exits 1
// (the drain cut a call), and none of its processes is left.
func TestServeDrain(t *testing.T) {
	w := startWorker(t, "", "--grace", "2s")
	short, long := w.sleep(500), w.sleep(60000)
	probe, err := net.Dial("tcp", strings.TrimPrefix(w.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	time.Sleep(200 * time.Millisecond) // the calls are under way
	children := proctest.Descendants(w.cmd.Process.Pid)
	if len(children) == 0 {
		t.Fatal("serve has no child processes")
	}
	start := time.Now()
	w.signal(syscall.SIGTERM)
	time.Sleep(100 * time.Millisecond)
	_, _ = io.WriteString(probe, "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(probe), nil)
	if err != nil {
		t.Errorf("/readyz during the drain: %v", err)
	} else {
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 503 || !strings.Contains(string(b), `"SHUTTING_DOWN"`) {
			t.Errorf("/readyz during the drain: %d %s", res.StatusCode, b)
		}
	}
	if got := <-short; got != "200" {
		t.Errorf("a call that ends within --grace: %s", got)
	}
	if got := <-long; got != "503 SHUTTING_DOWN" {
		t.Errorf("a call running at --grace: %s", got)
	}
	if d := time.Since(start); d < 2*time.Second || d > 5*time.Second {
		t.Errorf("the long call was answered after %v, want about --grace 2s", d)
	}
	if code := w.waitExit(10 * time.Second); code != ExitFail {
		t.Errorf("serve exited %d after a drain that cut a call, want %d", code, ExitFail)
	}
	if left := proctest.WaitGone(children, 2*time.Second); len(left) > 0 {
		t.Errorf("processes %v of serve outlived it", left)
	}
}

// TestServeSecondSignal: a second SIGTERM ends the drain at once, the call
// in flight answered 503 SHUTTING_DOWN; after a drain with nothing in
// flight serve exits 0.
func TestServeSecondSignal(t *testing.T) {
	w := startWorker(t, "", "--grace", "60s")
	long := w.sleep(60000)
	time.Sleep(200 * time.Millisecond)
	w.signal(syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	w.signal(syscall.SIGTERM)
	if got := <-long; got != "503 SHUTTING_DOWN" {
		t.Errorf("a call running at the second signal: %s", got)
	}
	if code := w.waitExit(5 * time.Second); code != ExitFail {
		t.Errorf("serve exited %d after a second signal cut a call, want %d", code, ExitFail)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("serve took %v to exit after the second signal", d)
	}

	w = startWorker(t, "", "--grace", "60s")
	if got := <-w.sleep(10); got != "200" {
		t.Fatalf("a call: %s", got)
	}
	w.signal(syscall.SIGINT)
	if code := w.waitExit(10 * time.Second); code != ExitOK {
		t.Errorf("serve exited %d after a drain with nothing in flight, want %d", code, ExitOK)
	}
}

// TestServeGraceUsage: --grace takes a Go duration; anything else is a
// usage error naming the form.
func TestServeGraceUsage(t *testing.T) {
	for _, v := range []string{"30", "soon", "-1s"} {
		var stderr strings.Builder
		if code := Run([]string{"serve", "--grace", v}, io.Discard, &stderr, Options{}); code != ExitUsage {
			t.Errorf("--grace %s: exit %d, want %d", v, code, ExitUsage)
		}
		if !strings.Contains(stderr.String(), "Go duration") || !strings.Contains(stderr.String(), "1m30s") {
			t.Errorf("--grace %s: %s", v, stderr.String())
		}
	}
}

// TestServeKilledLeavesNoProcesses: after SIGKILL of a worker, no process
// of its stdio server is alive 2 s later — not even a grandchild that
// ignores SIGTERM and stdin EOF, which the parent-death signal of the
// server does not reach.
func TestServeKilledLeavesNoProcesses(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild.pid")
	server := filepath.Join(dir, "server.sh")
	script := "#!/bin/sh\nsh -c 'trap \"\" TERM; exec sleep 300' </dev/null >/dev/null 2>&1 &\necho $! > " + pidFile + "\nexec " + testmcpBin + "\n"
	if err := os.WriteFile(server, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, server)
	if got := <-w.sleep(10); got != "200" {
		t.Fatalf("a call: %s", got)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	procs := proctest.Descendants(w.cmd.Process.Pid)
	if !slices.Contains(procs, grandchild) {
		procs = append(procs, grandchild)
	}
	if !proctest.Alive(grandchild) {
		t.Fatal("the grandchild is not running before the worker is killed")
	}
	w.signal(syscall.SIGKILL)
	w.waitExit(10 * time.Second)
	if left := proctest.WaitGone(procs, 2*time.Second); len(left) > 0 {
		t.Errorf("processes %v outlived the worker's SIGKILL by 2s", left)
		for _, p := range left {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
}
