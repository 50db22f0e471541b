package childproc

import (
	"bytes"
	"errors"
	"log/slog"
	"os/exec"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEnv: the child gets the allow-list from the worker and its declared
// variables, sorted, a declared one replacing an inherited one; nothing
// else of the worker's environment.
func TestEnv(t *testing.T) {
	worker := map[string]string{"PATH": "/bin", "HOME": "/home/w", "SECRET": "x", "USER": "w"}
	lookup := func(k string) (string, bool) { v, ok := worker[k]; return v, ok }
	got := Env(lookup, map[string]string{"Z": "1", "A": "2", "HOME": "/srv"})
	want := []string{"PATH=/bin", "USER=w", "A=2", "HOME=/srv", "Z=1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Env = %q, want %q", got, want)
	}
	if got := Env(lookup, nil); !reflect.DeepEqual(got, []string{"HOME=/home/w", "PATH=/bin", "USER=w"}) {
		t.Errorf("Env without declared variables = %q", got)
	}
}

// TestCommand: a child runs in its own process group with exactly the
// environment given (none for nil), and KillGroup kills the group.
func TestCommand(t *testing.T) {
	var stderr bytes.Buffer
	cmd := Command("sh", []string{"-c", `env; echo oops >&2`}, nil, t.TempDir(), &stderr)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if k, _, _ := strings.Cut(l, "="); k != "PWD" && k != "SHLVL" && k != "_" && k != "" {
			t.Errorf("a child given no environment has %s", l)
		}
	}
	if stderr.String() != "oops\n" {
		t.Errorf("stderr = %q", stderr.String())
	}

	cmd = Command("sleep", []string{"60"}, []string{"A=1"}, "", nil)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid, err := syscall.Getpgid(cmd.Process.Pid)
	if err != nil || pgid != cmd.Process.Pid {
		t.Errorf("pgid = %d (%v), want the child's own %d", pgid, err, cmd.Process.Pid)
	}
	KillGroup(cmd)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Errorf("Wait = %v, want the child killed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("KillGroup did not kill the child")
	}
	KillGroup(cmd) // after the exit: nothing happens
	KillGroup(nil)
	KillGroup(exec.Command("true"))
}

// TestStderrLog: lines are logged one by one, across writes, cut at 4,096
// bytes, and Last keeps the last 20 of them.
func TestStderrLog(t *testing.T) {
	var logged bytes.Buffer
	s := NewStderrLog(slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})), "git")
	_, _ = s.Write([]byte("first\r\nsec"))
	_, _ = s.Write([]byte("ond\n"))
	if got := s.Last(); !reflect.DeepEqual(got, []string{"first", "second"}) {
		t.Errorf("Last = %q", got)
	}
	if !strings.Contains(logged.String(), "server=git line=second") {
		t.Errorf("log: %s", logged.String())
	}
	n, err := s.Write([]byte(strings.Repeat("x", 5000)))
	if n != 5000 || err != nil {
		t.Errorf("Write = %d, %v", n, err)
	}
	if last := s.Last(); len(last[len(last)-1]) != stderrMaxLine {
		t.Errorf("a long partial line was kept as %d bytes", len(last[len(last)-1]))
	}
	_, _ = s.Write([]byte(strings.Repeat("y", 5000) + "\n"))
	if last := s.Last(); last[len(last)-1] != strings.Repeat("y", stderrMaxLine) {
		t.Errorf("a long line was kept as %d bytes", len(last[len(last)-1]))
	}
	for i := range 30 {
		_, _ = s.Write([]byte(strings.Repeat("z", i) + "\n"))
	}
	last := s.Last()
	if len(last) != stderrKeepLast || last[len(last)-1] != strings.Repeat("z", 29) {
		t.Errorf("Last kept %d lines, the last %q", len(last), last[len(last)-1])
	}
}
