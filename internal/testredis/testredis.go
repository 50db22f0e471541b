// Package testredis runs a real redis-server (Debian's package) for tests,
// on 127.0.0.1 and a port of its own, with no persistence, stopped when the
// test ends. A test skips when redis-server is not installed, unless CI is
// set: there it is required (.ci/run installs it).
package testredis

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/silentpeer"
)

// A Server is one redis-server process; Stop and Start stop it and start
// it again on the same port, as a store restarted under a fleet.
type Server struct {
	t    testing.TB
	bin  string
	port int
	cmd  *exec.Cmd
	done chan error
}

// Need returns redis-server's path, or skips t (fails it under CI=true).
func Need(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not installed, and CI is set: .ci/run installs it (Debian's redis-server)")
		}
		t.Skip("redis-server is not installed (apt-get install redis-server); CI requires it")
	}
	return bin
}

// Start runs a redis-server on a free port of 127.0.0.1 and waits until it
// answers; it is killed when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, bin: Need(t), port: freePort(t)}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Start starts the server (again) and waits until it answers PING.
func (s *Server) Start() {
	s.t.Helper()
	if s.cmd != nil {
		return
	}
	cmd := exec.Command(s.bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(s.port),
		"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--loglevel", "warning", "--dir", s.t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	s.cmd, s.done = cmd, make(chan error, 1)
	go func() { s.done <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(s.Addr()); err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer within 10 s", s.Addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server and waits for it to end.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// ping sends PING over RESP and reads +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("redis answered %q", line)
	}
	return nil
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Silent returns the redis:// URL of a listener on 127.0.0.1 that accepts
// connections and never answers: a store that hangs. It is closed, with
// the connections it holds, when t ends.
func Silent(t testing.TB) string {
	t.Helper()
	return "redis://" + silentpeer.Listen(t) + "/0"
}
