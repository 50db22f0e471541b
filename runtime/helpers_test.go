package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/proctest"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// openWith compiles api and agents, opens a runtime with opts and closes it
// when the test ends.
func openWith(t *testing.T, api string, agents map[string]string, opts runtime.Options) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.Open(context.Background(), compilePlan(t, api, agents), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// toolsetOf returns an agent's toolset or fails the test.
func toolsetOf(t *testing.T, rt *runtime.Runtime, agent string) *runtime.Toolset {
	t.Helper()
	ts, err := rt.Toolset(agent)
	if err != nil {
		t.Fatalf("Toolset(%s): %v", agent, err)
	}
	return ts
}

// mustCall calls a tool and fails the test unless it succeeded without a
// tool error.
func mustCall(t *testing.T, ts *runtime.Toolset, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := ts.Call(context.Background(), name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error (code %q): %s", name, runtime.RefusalCode(res), text(res))
	}
	return res
}

// wantRefusal calls a tool and fails the test unless the result is a
// refusal with code.
func wantRefusal(t *testing.T, ts *runtime.Toolset, name string, args map[string]any, code diag.Code) *mcp.CallToolResult {
	t.Helper()
	res, err := ts.Call(context.Background(), name, args)
	if err != nil {
		t.Fatalf("%s: error %v, want a %s refusal", name, err, code)
	}
	if got := runtime.RefusalCode(res); got != code || !res.IsError {
		t.Fatalf("%s: code %q (isError %v, %q), want %s", name, got, res.IsError, text(res), code)
	}
	return res
}

// structured returns a result's structuredContent as a map.
func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("structuredContent is %T, want an object", res.StructuredContent)
	}
	return m
}

// intField reads a JSON number field of structured content as an int.
func intField(t *testing.T, res *mcp.CallToolResult, key string) int {
	t.Helper()
	v, ok := structured(t, res)[key].(float64)
	if !ok {
		t.Fatalf("structuredContent.%s = %v, want a number", key, structured(t, res)[key])
	}
	return int(v)
}

// eventually polls cond every 20 ms until it is true, failing the test
// when it is still false after within.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitGone waits until none of pids is alive.
func waitGone(t *testing.T, within time.Duration, pids ...int) {
	t.Helper()
	eventually(t, within, fmt.Sprintf("processes %v gone", pids), func() bool {
		return !slices.ContainsFunc(pids, proctest.Alive)
	})
}

// procsWithArg returns the live processes that are children of this test
// process and have arg among their arguments.
func procsWithArg(arg string) []int {
	entries, _ := os.ReadDir("/proc")
	me := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			continue
		}
		if parentOf(pid) == me && proctest.Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// parentOf returns a process's parent pid, or 0.
func parentOf(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:]) // state, ppid, …
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// procWatcher records the pids of this process's children that carry arg,
// polling /proc until stopped.
type procWatcher struct {
	mu   sync.Mutex
	seen map[int]bool
	stop chan struct{}
	done chan struct{}
}

func watchProcs(arg string) *procWatcher {
	w := &procWatcher{seen: map[int]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			for _, pid := range procsWithArg(arg) {
				w.mu.Lock()
				w.seen[pid] = true
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return w
}

// Stop ends the polling and returns every pid seen.
func (w *procWatcher) Stop() []int {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []int
	for pid := range w.seen {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// httpServer is a heddle-testmcp process serving HTTP on a fixed port.
type httpServer struct {
	t    testing.TB
	port int
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been reaped
}

// startHTTPServer starts heddle-testmcp --transport http on port (0: any)
// with the given flags and waits until it listens. The process is killed
// when the test ends.
func startHTTPServer(t testing.TB, port int, args ...string) *httpServer {
	t.Helper()
	s := &httpServer{t: t, port: port, args: args}
	t.Cleanup(s.kill)
	s.start()
	return s
}

// URL returns the server's base URL (no path).
func (s *httpServer) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", s.port) }

func (s *httpServer) start() {
	t := s.t
	t.Helper()
	args := append([]string{"--transport", "http", "--listen", fmt.Sprintf("127.0.0.1:%d", s.port)}, s.args...)
	// A port just released may take a moment to be free again.
	for try := 0; try < 50; try++ {
		cmd := exec.Command(testmcpBin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		lw := &firstLine{line: make(chan string, 1)}
		cmd.Stdout = lw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		var l string
		select {
		case l = <-lw.line:
		case <-exited: // could not listen
			time.Sleep(20 * time.Millisecond)
			continue
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("heddle-testmcp did not start listening")
		}
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), testmcp.ListeningPrefix)
		if !ok {
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("heddle-testmcp printed %q", l)
		}
		if s.port == 0 {
			s.port, _ = strconv.Atoi(rest[strings.LastIndexByte(rest, ':')+1:])
		}
		s.mu.Lock()
		s.cmd, s.exited = cmd, exited
		s.mu.Unlock()
		return
	}
	t.Fatalf("heddle-testmcp could not listen on port %d", s.port)
}

// kill kills the server (SIGKILL, no goodbye) and waits until it is reaped.
func (s *httpServer) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd, s.exited = nil, nil
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		<-exited
	}
}

// restart kills the server and starts a new process on the same port.
func (s *httpServer) restart() {
	s.t.Helper()
	s.kill()
	s.start()
}

// restartWith kills the server and starts a new process on the same port
// with other flags.
func (s *httpServer) restartWith(args ...string) {
	s.t.Helper()
	s.kill()
	s.args = args
	s.start()
}

// firstLine is a Writer that hands over the first line written to it and
// discards the rest.
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

// logRecord is one captured log record with its attributes as strings.
type logRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

// logCapture is a slog.Handler that keeps every record, and tells waiters
// of the first that matches.
type logCapture struct {
	mu      *sync.Mutex
	recs    *[]logRecord
	waiters *[]logWaiter
	attrs   []slog.Attr
}

// logWaiter is one Await: seen is closed at the first record match accepts.
type logWaiter struct {
	match func(logRecord) bool
	seen  chan struct{}
}

func newLogCapture() *logCapture {
	return &logCapture{mu: &sync.Mutex{}, recs: &[]logRecord{}, waiters: &[]logWaiter{}}
}

// Await returns a channel closed once a record that match accepts has been
// logged, before the call or after.
func (c *logCapture) Await(match func(logRecord) bool) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := logWaiter{match: match, seen: make(chan struct{})}
	if slices.ContainsFunc(*c.recs, match) {
		close(w.seen)
	} else {
		*c.waiters = append(*c.waiters, w)
	}
	return w.seen
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range c.attrs {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.recs = append(*c.recs, rec)
	*c.waiters = slices.DeleteFunc(*c.waiters, func(w logWaiter) bool {
		if w.match(rec) {
			close(w.seen)
			return true
		}
		return false
	})
	return nil
}

func (c *logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	return &logCapture{mu: c.mu, recs: c.recs, waiters: c.waiters, attrs: append(slices.Clone(c.attrs), as...)}
}

func (c *logCapture) WithGroup(string) slog.Handler { return c }

// Records returns a copy of the records so far.
func (c *logCapture) Records() []logRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(*c.recs)
}
