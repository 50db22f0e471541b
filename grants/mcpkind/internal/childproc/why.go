package childproc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// StartError explains, naming the command, why a child could not be
// started: err is what starting it returned (exec.Cmd.Start, or a transport
// that starts it), name the command as the configuration gives it and dir
// the child's working directory ("" for the worker's). A relative command
// with a directory in it (bin/server) is resolved against dir, so its
// message names the directory it was looked for in. ok is false for an
// error that is not about starting a program.
func StartError(name, dir string, err error) (reason string, ok bool) {
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return fmt.Sprintf("command %s not found in PATH", name), true
	case errors.Is(err, exec.ErrDot):
		return fmt.Sprintf("command %s is found only through a relative PATH entry; write it as ./%s or give an absolute path", name, name), true
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return "", false
	}
	switch pe.Op {
	case "chdir":
		return fmt.Sprintf("command %s cannot be started in its directory %s: %s", name, dir, errnoText(pe.Err)), true
	case "fork/exec", "exec":
	default:
		return "", false
	}
	resolved := name
	if !filepath.IsAbs(name) {
		resolved = filepath.Join(workingDir(dir), name)
	}
	info, statErr := os.Stat(resolved)
	switch {
	case errors.Is(pe.Err, syscall.ENOENT) && statErr == nil:
		return fmt.Sprintf("command %s exists, but the interpreter its first line (#!) names was not found", name), true
	case errors.Is(pe.Err, syscall.ENOENT) && !filepath.IsAbs(name):
		return fmt.Sprintf("command %s not found; a relative command is resolved against the working directory %s: run heddle there, build the command (for the shipped example: make build) or give an absolute path", name, workingDir(dir)), true
	case errors.Is(pe.Err, syscall.ENOENT):
		return fmt.Sprintf("command %s not found", name), true
	case errors.Is(pe.Err, syscall.EACCES) && statErr == nil && info.IsDir():
		return fmt.Sprintf("command %s is a directory, not a program", name), true
	case errors.Is(pe.Err, syscall.EACCES):
		return fmt.Sprintf("command %s is not executable (permission denied)", name), true
	case errors.Is(pe.Err, syscall.ENOEXEC):
		return fmt.Sprintf("command %s is not a program this system can run (exec format error)", name), true
	}
	return fmt.Sprintf("command %s could not be started: %s", name, errnoText(pe.Err)), true
}

// workingDir is the absolute directory a child with dir runs in.
func workingDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// errnoText is the system's text for an error number, and a generic word
// for anything else (whose text could hold more than a path).
func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return "failed"
}

// ExitReason says how a child that has been waited for ended: "exited with
// status 3", "was killed by signal 11 (segmentation fault)". It is "" for a
// child that was never started or not yet waited for; call it only once
// Wait has returned.
func ExitReason(cmd *exec.Cmd) string {
	if cmd == nil || cmd.ProcessState == nil {
		return ""
	}
	st := cmd.ProcessState
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := ws.Signal()
		return fmt.Sprintf("was killed by signal %d (%s)", int(sig), strings.TrimSpace(sig.String()))
	}
	return fmt.Sprintf("exited with status %d", st.ExitCode())
}
