package testmcp

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// SleepForeverArg, given as the only argument, asks a program to behave as
// the grandchild the spawn_child tool starts: call [SleepForever] and exit.
// The heddle-testmcp binary and this package's tests honour it; a test binary
// of another package that calls spawn_child on an in-process server must
// honour it too, in its TestMain:
//
//	if len(os.Args) > 1 && os.Args[1] == testmcp.SleepForeverArg {
//		testmcp.SleepForever()
//		os.Exit(0)
//	}
const SleepForeverArg = "--sleep-forever"

// SleepDuration is how long [SleepForever] sleeps: long enough to outlive any
// test, short enough that a leaked grandchild does not live for ever.
const SleepDuration = 300 * time.Second

// SleepForever is the body of the spawn_child grandchild: it ignores SIGTERM,
// SIGINT and SIGHUP, never reads stdin (so stdin EOF does not end it), and
// sleeps for [SleepDuration]. Only SIGKILL, for example to its process
// group, ends it early.
func SleepForever() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	time.Sleep(SleepDuration)
}

// spawnSleeper re-executes the running program with SleepForeverArg, in the
// caller's process group, and returns the new process's pid. The child's
// stdio is /dev/null so it holds no pipe of ours open.
func spawnSleeper() (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("finding the executable: %w", err)
	}
	cmd := exec.Command(exe, SleepForeverArg)
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting the grandchild: %w", err)
	}
	go cmd.Wait() // reap it if it ends while we live
	return cmd.Process.Pid, nil
}
