//go:build unix

package testmcp

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListenAndServeBinary runs the binary over HTTP on port 0, reads the
// address it prints, and talks to both endpoints.
func TestListenAndServeBinary(t *testing.T) {
	cmd := exec.Command(binPath, "--transport=http", "--listen=127.0.0.1:0", "--name=over-http")
	cmd.Stderr = stderrLog(t)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})

	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the address line: %v", err)
	}
	base, ok := strings.CutPrefix(strings.TrimSpace(line), ListeningPrefix)
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") || strings.HasSuffix(base, ":0") {
		t.Fatalf("address line %q, want %shttp://127.0.0.1:PORT", line, ListeningPrefix)
	}

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	for _, transport := range []mcp.Transport{
		&mcp.StreamableClientTransport{Endpoint: base + StreamablePath, HTTPClient: hc},
		&mcp.SSEClientTransport{Endpoint: base + SSEPath, HTTPClient: hc},
	} {
		cs, err := newClient(nil).Connect(testCtx(t, 10*time.Second), transport, nil)
		if err != nil {
			t.Fatalf("connect to %s: %v", base, err)
		}
		if got := cs.InitializeResult().ServerInfo.Name; got != "over-http" {
			t.Errorf("server name %q", got)
		}
		if got := text(call(t, cs, "echo", map[string]any{"text": "over http"})); got != "over http" {
			t.Errorf("echo: got %q", got)
		}
		cs.Close()
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	exited = true
	if err != nil {
		t.Errorf("after SIGTERM the server exited with %v, want status 0", err)
	}
}

// TestSpawnChildDiesWithProcessGroup checks what spawn_child is for: the
// grandchild outlives a plain Close of the stdio session, and dies when the
// server's process group is killed.
func TestSpawnChildDiesWithProcessGroup(t *testing.T) {
	cmd := exec.Command(binPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cs := connectCommand(t, cmd, nil)

	res := call(t, cs, "pid", nil)
	ids, _ := res.StructuredContent.(map[string]any)
	pid, _ := ids["pid"].(float64)
	pgid, _ := ids["pgid"].(float64)
	if int(pid) != cmd.Process.Pid || int(pgid) != cmd.Process.Pid {
		t.Fatalf("pid tool: %v, want pid and pgid %d", ids, cmd.Process.Pid)
	}

	res = call(t, cs, "spawn_child", nil)
	out, _ := res.StructuredContent.(map[string]any)
	child, _ := out["pid"].(float64)
	if child <= 0 {
		t.Fatalf("spawn_child: %v", res.StructuredContent)
	}
	grandchild := int(child)
	t.Cleanup(func() { syscall.Kill(grandchild, syscall.SIGKILL) })

	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if !alive(grandchild) {
		t.Fatal("the grandchild died with its parent; it should ignore stdin EOF and outlive it")
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the process group: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(grandchild) {
		if time.Now().After(deadline) {
			t.Fatal("the grandchild survived SIGKILL to its process group")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether a process exists and is not a zombie (an orphan is
// reaped by init, which in a container may never happen).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) || runtime.GOOS != "linux"
	}
	// The state follows the parenthesised command name: "pid (comm) S …".
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// TestSpawnChildInProcess checks that spawn_child also works when the server
// runs in this test binary (which honours SleepForeverArg in TestMain), and
// that the grandchild ignores SIGTERM.
func TestSpawnChildInProcess(t *testing.T) {
	cs := connect(t, kindInMemory, nil, nil)
	out, _ := call(t, cs, "spawn_child", nil).StructuredContent.(map[string]any)
	child, _ := out["pid"].(float64)
	if child <= 0 {
		t.Fatalf("spawn_child: %v", out)
	}
	pid := int(child)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })

	// Wait until it ignores SIGTERM, then check that it shrugs it off.
	waitIgnoresSIGTERM(t, pid)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if !alive(pid) {
		t.Fatal("the grandchild died of SIGTERM")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatal("the grandchild survived SIGKILL")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitIgnoresSIGTERM waits until the process pid ignores SIGTERM, as its
// /proc status tells on Linux; elsewhere it waits a second.
func waitIgnoresSIGTERM(t *testing.T, pid int) {
	t.Helper()
	if runtime.GOOS != "linux" {
		time.Sleep(time.Second)
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(status)) {
			if hex, ok := strings.CutPrefix(line, "SigIgn:"); ok {
				mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
				if err != nil {
					t.Fatalf("parsing %q: %v", line, err)
				}
				if mask&(1<<(uint(syscall.SIGTERM)-1)) != 0 {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the grandchild never started ignoring SIGTERM")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
