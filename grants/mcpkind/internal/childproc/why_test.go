package childproc

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLastLine: LastLine reports the last line that is not blank written
// after a mark — a line without its newline too — cut on a character
// boundary, and nothing a child wrote before the mark.
func TestLastLine(t *testing.T) {
	s := NewStderrLog(slog.New(slog.NewTextHandler(io.Discard, nil)), "x")
	_, _ = s.Write([]byte("old line\nold partial"))
	m := s.Mark()
	if got := s.LastLine(m, 200); got != "" {
		t.Errorf("LastLine right after Mark = %q, want nothing", got)
	}
	if last := s.Last(); last[len(last)-1] != "old partial" {
		t.Errorf("Mark did not end the previous child's line: %q", last)
	}
	_, _ = s.Write([]byte("first\nlast\n\n  \n"))
	if got := s.LastLine(m, 200); got != "last" {
		t.Errorf("LastLine = %q, want the last line that is not blank", got)
	}
	_, _ = s.Write([]byte("no newline"))
	if got := s.LastLine(m, 200); got != "no newline" {
		t.Errorf("LastLine = %q, want the line in progress", got)
	}
	m = s.Mark()
	_, _ = s.Write([]byte("\n\n"))
	if got := s.LastLine(m, 200); got != "" {
		t.Errorf("LastLine = %q, want nothing: only blank lines since the mark", got)
	}
	m = s.Mark()
	_, _ = s.Write([]byte(strings.Repeat("é", 150) + "\n"))
	got := s.LastLine(m, 201)
	if !strings.HasSuffix(got, "…") || len(got) > 201+len("…") || !strings.HasPrefix(got, strings.Repeat("é", 100)) {
		t.Errorf("a long line cut to %d bytes: %q", len(got), got)
	}
}

// TestStartError: the reasons a command does not start are told apart, each
// naming the command; a relative one names the directory it was looked for
// in; an error that is not about starting is not explained.
func TestStartError(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain", "#!/bin/sh\n", 0o644)
	noInterp := write("nointerp", "#!/nonexistent/sh\n", 0o755)
	binary := write("binary", "\x00\x01\x02\x03 not a program", 0o755)
	tests := []struct {
		name, command, dir string
		names              []string
	}{
		{"relative, missing", "bin/absent", dir, []string{"bin/absent", dir}},
		{"not in PATH", "heddle-no-such-command", "", []string{"heddle-no-such-command", "PATH"}},
		{"not executable", plain, "", []string{plain}},
		{"a directory", dir, "", []string{dir}},
		{"missing interpreter", noInterp, "", []string{noInterp}},
		{"no program", binary, "", []string{binary}},
	}
	seen := map[string]string{}
	for _, tc := range tests {
		cmd := Command(tc.command, nil, nil, tc.dir, nil)
		err := cmd.Start()
		if err == nil {
			KillGroup(cmd)
			_ = cmd.Wait()
			t.Fatalf("%s: the command started", tc.name)
		}
		why, ok := StartError(tc.command, tc.dir, err)
		if !ok {
			t.Errorf("%s: %v is not explained", tc.name, err)
			continue
		}
		for _, n := range tc.names {
			if !strings.Contains(why, n) {
				t.Errorf("%s: %q does not name %q", tc.name, why, n)
			}
		}
		if other, dup := seen[why]; dup {
			t.Errorf("%s and %s are told alike: %q", other, tc.name, why)
		}
		seen[why] = tc.name
	}
	if _, ok := StartError("x", "", io.EOF); ok {
		t.Error("an error that is not about starting is explained")
	}
}

// TestExitReason: an exit status and a signal are told apart; a child not
// waited for has no reason.
func TestExitReason(t *testing.T) {
	if got := ExitReason(exec.Command("true")); got != "" {
		t.Errorf("a child never started: %q", got)
	}
	cmd := Command("sh", []string{"-c", "exit 3"}, nil, "", nil)
	_ = cmd.Run()
	exited := ExitReason(cmd)
	cmd = Command("sh", []string{"-c", "kill -SEGV $$"}, nil, "", nil)
	_ = cmd.Run()
	killed := ExitReason(cmd)
	if !strings.Contains(exited, "3") || !strings.Contains(killed, "11") || exited == killed {
		t.Errorf("exit 3 is %q, SIGSEGV %q", exited, killed)
	}
}
