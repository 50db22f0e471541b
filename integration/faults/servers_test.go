package faults_test

import (
	"bufio"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/silentpeer"
	"github.com/heddlehq/heddle/internal/testmcp"
)

// httpServer is a heddle-testmcp process serving Streamable HTTP at /mcp
// and SSE at /sse on 127.0.0.1, which a cell may kill and start again on
// the same port.
type httpServer struct {
	t    *testing.T
	args []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	base string // http://127.0.0.1:PORT
	addr string
}

// startHTTP starts the test server over HTTP with opts; the test's cleanup
// stops it.
func startHTTP(t *testing.T, opts *testmcp.Options) *httpServer {
	t.Helper()
	s := &httpServer{t: t, args: opts.Args(), addr: "127.0.0.1:0"}
	s.start()
	t.Cleanup(s.kill)
	return s
}

// start starts the process on s.addr and waits until it listens.
func (s *httpServer) start() {
	s.t.Helper()
	cmd := exec.Command(testmcpBin, append([]string{"--transport", "http", "--listen", s.addr}, s.args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	base, ok := strings.CutPrefix(strings.TrimSpace(line), testmcp.ListeningPrefix)
	if err != nil || !ok {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if s.addr != "127.0.0.1:0" {
			// The port may still be held for a moment by the old process.
			time.Sleep(100 * time.Millisecond)
			s.start()
			return
		}
		s.t.Fatalf("the test server printed %q (%v)", line, err)
	}
	s.mu.Lock()
	s.cmd, s.base, s.addr = cmd, base, strings.TrimPrefix(base, "http://")
	s.mu.Unlock()
}

// kill kills the process, if it runs, and waits for it.
func (s *httpServer) kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
}

// restart kills the process and starts another on the same port.
func (s *httpServer) restart() {
	s.kill()
	s.start()
}

// url is the endpoint of transport tr: /mcp for http, /sse for sse.
func (s *httpServer) url(tr string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tr == "sse" {
		return s.base + testmcp.SSEPath
	}
	return s.base + testmcp.StreamablePath
}

// closedPort returns an address on 127.0.0.1 where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// silent returns the address of a listener that accepts connections and
// never answers on them: a peer that hangs (silentpeer.Listen).
func silent(t *testing.T) string { return silentpeer.Listen(t) }
