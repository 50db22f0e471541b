//go:build soak

package soak

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/heddlehq/heddle/internal/testmcp"
)

// httpServer is one test server over Streamable HTTP or SSE, in a process
// (and process group) of its own that the soak starts, kills and starts
// again on the same address.
type httpServer struct {
	name      string // the server's name in ai.mcp_servers and its --name
	transport string // "http" or "sse"
	log       *os.File

	mu   sync.Mutex
	addr string // 127.0.0.1:PORT, fixed by the first start
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd is reaped
}

// url is the endpoint heddle is configured with.
func (s *httpServer) url() string {
	path := testmcp.StreamablePath
	if s.transport == "sse" {
		path = testmcp.SSEPath
	}
	return "http://" + s.addr + path
}

// start starts the server, on a port the kernel picks the first time and
// on the same address after, and returns once it listens. A restart whose
// address is still taken is tried again for up to 10 s.
func (s *httpServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	listen := s.addr
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	var err error
	for try := 0; try < 50; try++ {
		if err = s.startOnce(listen); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("server %s: %w", s.name, err)
}

func (s *httpServer) startOnce(listen string) error {
	cmd := exec.Command(testmcpBin, "--transport", "http", "--listen", listen, "--"+testmcp.FlagName+"="+s.name)
	cmd.Stderr = s.log
	// A group of its own, so that a kill reaches the whole server; killed
	// with the test if the test dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	line, rerr := bufio.NewReader(out).ReadString('\n')
	go func() {
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(done)
	}()
	base, ok := strings.CutPrefix(strings.TrimSpace(line), testmcp.ListeningPrefix+"http://")
	if rerr != nil || !ok {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("printed %q (%v) instead of its address", line, rerr)
	}
	s.addr, s.cmd, s.done = base, cmd, done
	return nil
}

// pid is the running server's process id (0 when none runs).
func (s *httpServer) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// kill sends SIGKILL to the server's process group and waits until the
// process is reaped.
func (s *httpServer) kill() {
	s.signalGroup(syscall.SIGKILL, 5*time.Second)
}

// stop sends SIGTERM (after SIGCONT, in case it hangs), then SIGKILL if
// the server is still there a second later.
func (s *httpServer) stop() {
	s.signalGroup(syscall.SIGCONT, 0)
	if !s.signalGroup(syscall.SIGTERM, time.Second) {
		s.kill()
	}
}

// signalGroup sends sig to the server's process group and waits up to
// wait for the process to end; it reports whether it ended.
func (s *httpServer) signalGroup(sig syscall.Signal, wait time.Duration) bool {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return true
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	if wait == 0 {
		return false
	}
	select {
	case <-done:
		s.mu.Lock()
		if s.cmd == cmd {
			s.cmd = nil
		}
		s.mu.Unlock()
		return true
	case <-time.After(wait):
		return false
	}
}
