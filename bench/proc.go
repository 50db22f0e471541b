package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// procs holds the process groups this program started itself (the HTTP
// servers and the node worker), so that every exit path can kill them.
// Stdio servers are children of the clients that start them, which stop
// them on Close; they are started with a parent-death signal as well.
var procs = struct {
	mu    sync.Mutex
	pgids map[int]struct{}
}{pgids: map[int]struct{}{}}

// startGroup starts cmd in a process group of its own, killed by
// killGroup or killAll.
func startGroup(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	procs.mu.Lock()
	procs.pgids[cmd.Process.Pid] = struct{}{}
	procs.mu.Unlock()
	return nil
}

// startPiped starts cmd as startGroup does, with pipes to its stdin and
// from its stdout.
func startPiped(cmd *exec.Cmd) (io.WriteCloser, io.ReadCloser, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := startGroup(cmd); err != nil {
		return nil, nil, err
	}
	return stdin, stdout, nil
}

// killGroup kills the process group of cmd, started by startGroup. The
// caller reaps cmd.
func killGroup(cmd *exec.Cmd) {
	pid := cmd.Process.Pid
	procs.mu.Lock()
	delete(procs.pgids, pid)
	procs.mu.Unlock()
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// killAll kills every process group still running, on the way out.
func killAll() {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	for pid := range procs.pgids {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		delete(procs.pgids, pid)
	}
}

// stdioAttr is the SysProcAttr of a stdio server a Go client starts: a
// process group of its own (a signal to the benchmark's group does not
// reach it) that dies with the benchmark.
func stdioAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// buildServer builds cmd/heddle-testmcp from the repository at root, with
// the repository's own go.mod, into dir, and returns the binary's path.
func buildServer(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "heddle-testmcp")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/heddle-testmcp")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building heddle-testmcp: %v\n%s", err, out)
	}
	return bin, nil
}

// listeningPrefix starts the line heddle-testmcp prints on stdout once it
// accepts connections over HTTP (testmcp.ListeningPrefix).
const listeningPrefix = "listening on "

// httpServer is a heddle-testmcp process serving Streamable HTTP on
// 127.0.0.1.
type httpServer struct {
	cmd    *exec.Cmd
	url    string // the endpoint, http://127.0.0.1:PORT/mcp
	exited chan struct{}
}

// startHTTPServer starts bin serving HTTP on a port of 127.0.0.1 with the
// extra flags args, and waits (at most 20 s) until it listens.
func startHTTPServer(bin string, args ...string) (*httpServer, error) {
	cmd := exec.Command(bin, append([]string{"--transport", "http", "--listen", "127.0.0.1:0"}, args...)...)
	fl := &firstLine{line: make(chan string, 1)}
	cmd.Stdout = fl
	if err := startGroup(cmd); err != nil {
		return nil, err
	}
	s := &httpServer{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	line := fl.line
	select {
	case l := <-line:
		addr, ok := strings.CutPrefix(strings.TrimSpace(l), listeningPrefix)
		if !ok {
			s.stop()
			return nil, fmt.Errorf("heddle-testmcp printed %q", l)
		}
		s.url = addr + "/mcp"
		return s, nil
	case <-s.exited:
		return nil, errors.New("heddle-testmcp exited before listening")
	case <-time.After(20 * time.Second):
		s.stop()
		return nil, errors.New("heddle-testmcp did not start listening within 20s")
	}
}

// stop kills the server's process group and waits until it is reaped.
func (s *httpServer) stop() {
	killGroup(s.cmd)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		fmt.Fprintln(os.Stderr, "bench-compare: heddle-testmcp was not reaped within 10s")
	}
}

// firstLine is a writer that sends the first line written to it on line
// and discards the rest.
type firstLine struct {
	mu   sync.Mutex
	buf  []byte
	sent bool
	line chan string
}

func (w *firstLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
		w.sent = true
		w.line <- string(w.buf[:i])
		w.buf = nil
	}
	return len(p), nil
}
