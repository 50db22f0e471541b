// Package childproc starts the child processes of stdio servers as heddle
// runs them: with an allow-listed environment, in a process group of their
// own that dies with the worker, and with their stderr drained into the log.
//
// A worker starts a child like this:
//
//	env := childproc.Env(os.LookupEnv, map[string]string{"GIT_TOKEN": token})
//	stderr := childproc.NewStderrLog(logger, "git")
//	cmd := childproc.Command("mcp-server-git", []string{"--repository", "/srv/repo"}, env, "", stderr)
//	err := childproc.Start(cmd) // as the stdio transport does
//	// … and when done with it:
//	childproc.KillGroup(cmd)
//
// # Dying with the worker
//
// A child's whole process group must die with the worker, however the
// worker ends — SIGKILL and the OOM killer included, when no code of the
// worker runs. The parent-death signal (Pdeathsig, SIGKILL) reaches only
// the direct child; a server's own children (npx's node, a shell's
// background job) are reparented and live on, even those that would end on
// SIGTERM or on stdin's end, since nobody sends them either. What can kill
// them has to be a process that outlives the worker:
//
//   - PR_SET_CHILD_SUBREAPER on the worker does not help: orphans are
//     reparented to it only while it lives.
//   - A reaper between the worker and each server (the server its child)
//     would change what the worker sees of the server: start errors (a
//     command not found, not executable) would come from the reaper's exec,
//     and the exit status and SIGTERM would pass through it.
//   - A cgroup per worker (systemd's KillMode, a container) kills
//     everything, but is the deployment's, not a library's, to set up.
//
// So each worker has one watchdog: a process started on the first Start,
// from the worker's own executable (/proc/self/exe, so a binary replaced on
// disk since still works) with HEDDLE_CHILDPROC_WATCHDOG=1 in its otherwise
// empty environment. Any binary that links this package — heddle, and
// every application that embeds the runtime, which links it through the
// stdio transport — serves that mode from this package's init, before its
// main runs, so the worker knows its executable supports it. The watchdog
// reads the process groups to kill from a pipe whose only writer is the
// worker (close-on-exec, so no server inherits it): Start adds a server's
// group, KillGroup takes it back. When the pipe ends — the worker's process
// is gone, whatever ended it, since the kernel closes its descriptors — the
// watchdog kills every group it still holds with SIGKILL and exits. It
// ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT and runs in its own process
// group, so that a signal meant for the worker (a terminal's ^C, a kill of
// the worker's group) does not take it first; it ends within a moment of a
// worker that exits normally.
//
// What it does not reach: a descendant that leaves its server's process
// group (setsid, setpgid: daemons do), and anything started while the
// watchdog could not be (no /proc, a binary that cannot be executed); then
// only the parent-death signal of the direct child is left, as without it.
// The other packages' init functions of the binary run in the watchdog
// before this one's; they should not do work there (none of heddle's do).
package childproc

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"
)

// envAllowed are the variables a child inherits from the worker; everything
// else it gets is declared in the server's env.
var envAllowed = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}

// Env builds a child's environment: HOME, LOGNAME, PATH, SHELL, TERM and
// USER as lookup finds them in the worker's environment, then the declared
// variables (already resolved) in the order of their names. A declared
// variable replaces an inherited one of the same name.
func Env(lookup func(string) (string, bool), declared map[string]string) []string {
	var env []string
	for _, k := range envAllowed {
		if _, override := declared[k]; override {
			continue
		}
		if v, ok := lookup(k); ok {
			env = append(env, k+"="+v)
		}
	}
	keys := make([]string, 0, len(declared))
	for k := range declared {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+declared[k])
	}
	return env
}

// Command builds the child process of a stdio server, not yet started: env
// is its whole environment (nil is an empty one, never the worker's), dir
// its working directory ("" is the worker's). It runs in its own process
// group, so that KillGroup reaches what it starts itself (as wrappers such
// as npx do), and the kernel kills it if the worker dies. Its stderr goes to
// stderr.
func Command(name string, args, env []string, dir string, stderr io.Writer) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Dir = dir
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithWorker(cmd.SysProcAttr)
	return cmd
}

// KillGroup kills the whole process group of a child built by Command, and
// takes it back from the watchdog. It is safe to call with nil, with a
// child never started, and after the child has exited.
func KillGroup(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	tellWatchdog('-', cmd.Process.Pid)
}

// Bounds of a StderrLog.
const (
	stderrMaxLine  = 4096 // longer lines are cut
	stderrKeepLast = 20   // lines Last returns
)

// StderrLog drains a child's stderr into the log, one debug record per
// line, and keeps the last lines for diagnostics. Lines over 4,096 bytes are
// cut; a Write never blocks the child for longer than a log record takes.
// It is safe for concurrent use.
type StderrLog struct {
	log    *slog.Logger
	server string

	mu      sync.Mutex
	partial []byte
	last    []string
	writes  uint64 // Writes with something in them, for Mark
	lines   uint64 // lines logged
}

// NewStderrLog returns a StderrLog that logs to log, each record naming
// server.
func NewStderrLog(log *slog.Logger, server string) *StderrLog {
	return &StderrLog{log: log, server: server}
}

// Write logs each complete line of p, keeping a partial last line for the
// next Write. It always consumes all of p.
func (s *StderrLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(p) > 0 {
		s.writes++
	}
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			if len(s.partial) > stderrMaxLine {
				s.emit(s.partial[:stderrMaxLine])
				s.partial = s.partial[:0]
			}
			return len(p), nil
		}
		line := s.partial[:i]
		if len(line) > stderrMaxLine {
			line = line[:stderrMaxLine]
		}
		s.emit(line)
		s.partial = s.partial[i+1:]
	}
}

func (s *StderrLog) emit(line []byte) {
	l := string(bytes.TrimRight(line, "\r"))
	s.lines++
	s.last = append(s.last, l)
	if len(s.last) > stderrKeepLast {
		s.last = s.last[len(s.last)-stderrKeepLast:]
	}
	s.log.LogAttrs(context.Background(), slog.LevelDebug, "server stderr", slog.String("server", s.server), slog.String("line", l))
}

// Last returns the last 20 lines the child wrote to stderr, oldest first.
func (s *StderrLog) Last() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.last...)
}

// Mark is a point in a StderrLog's output, taken by [StderrLog.Mark].
type Mark struct{ writes, lines uint64 }

// Mark is called before a new child starts writing: it ends the line a
// previous child left unfinished (logging it), and returns a mark for
// LastLine, which then reports only what was written after it.
func (s *StderrLog) Mark() Mark {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.partial) > 0 {
		s.emit(s.partial)
		s.partial = s.partial[:0]
	}
	return Mark{writes: s.writes, lines: s.lines}
}

// LastLine returns the last line that is not blank written since mark — the
// line in progress when the child ended without a newline after it — with
// surrounding white space trimmed and cut to at most max bytes (on a
// character boundary, "…" marking the cut); "" when there is none. A child
// that has been waited for has all of its output here.
func (s *StderrLog) LastLine(mark Mark, max int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writes == mark.writes {
		return ""
	}
	line := strings.TrimSpace(string(s.partial))
	since := s.lines - mark.lines // lines logged since mark, the newest last
	for i := len(s.last) - 1; line == "" && i >= 0 && uint64(len(s.last)-i) <= since; i-- {
		line = strings.TrimSpace(s.last[i])
	}
	return cut(line, max)
}

// cut shortens s to at most max bytes without splitting a character, and
// marks a cut with "…".
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	end := max
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "…"
}

var _ io.Writer = (*StderrLog)(nil)
