//go:build !linux

package childproc

import "syscall"

// dieWithWorker does nothing: only Linux has a parent-death signal. heddle
// serves on Linux; on macOS, where make release builds it too for the
// commands that read the configuration offline and for trying it out, a
// child outlives a worker that is killed without stopping it, and there is
// no /proc/self/exe to start the watchdog from either.
func dieWithWorker(*syscall.SysProcAttr) {}
