package runtime

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"

	"github.com/heddlehq/heddle/grants/mcpkind"
)

// stdioEnvAllowed are the variables a stdio child inherits from the worker;
// everything else it gets is declared in the server's env.
var stdioEnvAllowed = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}

// childEnv builds a stdio child's environment: the allow-list from the
// worker's environment plus the declared variables (already resolved).
func childEnv(lookup func(string) (string, bool), declared map[string]string) []string {
	var env []string
	for _, k := range stdioEnvAllowed {
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

// newCommand builds the child process of a stdio server: its own process
// group (so the whole tree can be killed, including what wrappers such as
// npx start), killed by the kernel if the worker dies, stderr to the log.
func newCommand(spec *mcpkind.Server, env []string, stderr *stderrLog) *exec.Cmd {
	cmd := exec.Command(spec.Command, spec.Args...)
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Dir = spec.Dir
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// killGroup kills a child's whole process group. It is safe to call after
// the child has exited.
func killGroup(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// stderrLog drains a child's stderr into the log line by line, keeping the
// last lines in a bounded buffer for diagnostics. Lines over maxLine bytes
// are cut; it never blocks the child.
type stderrLog struct {
	log    *slog.Logger
	server string

	mu      sync.Mutex
	partial []byte
	last    []string
}

const (
	stderrMaxLine  = 4096
	stderrKeepLast = 20
)

func (s *stderrLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
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

func (s *stderrLog) emit(line []byte) {
	l := string(bytes.TrimRight(line, "\r"))
	s.last = append(s.last, l)
	if len(s.last) > stderrKeepLast {
		s.last = s.last[len(s.last)-stderrKeepLast:]
	}
	s.log.LogAttrs(context.Background(), slog.LevelDebug, "server stderr", slog.String("server", s.server), slog.String("line", l))
}

// Last returns the last lines the child wrote to stderr.
func (s *stderrLog) Last() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.last...)
}

var osLookupEnv = os.LookupEnv
