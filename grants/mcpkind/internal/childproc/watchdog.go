package childproc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
)

// watchdogEnv, set to "1" in a process's environment, makes any binary
// that links this package run as the watchdog (see init) instead of its
// main.
const watchdogEnv = "HEDDLE_CHILDPROC_WATCHDOG"

// watchdogExe is the executable the watchdog is started from: the running
// binary itself, found through /proc even if its file was replaced or
// removed since it started.
const watchdogExe = "/proc/self/exe"

func init() {
	if os.Getenv(watchdogEnv) == "1" {
		os.Exit(runWatchdog(os.Stdin))
	}
}

// runWatchdog is the body of the watchdog process: it reads "+PGID" and
// "-PGID" lines from in, the process groups to kill and those no longer to
// kill, until in ends — when the worker, the only writer, exits or is
// killed, SIGKILL included. It then kills every group it still holds.
func runWatchdog(in *os.File) int {
	// The watchdog outlives signals meant for the worker: only the end of
	// its input ends it.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	groups := map[int]bool{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			groups[pgid] = true
		case '-':
			delete(groups, pgid)
		}
	}
	for pgid := range groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	return 0
}

// watchdog is the worker's end of its watchdog: the pipe it writes the
// groups to. It is started by the first Start; w is nil when it could not
// be, and then only the parent-death signal of each child is left.
var watchdog struct {
	once sync.Once
	mu   sync.Mutex
	w    *os.File
}

// startWatchdog starts the watchdog process, in a process group of its own
// (so that a terminal's ^C does not reach it), reading the pipe's other
// end. Both ends are close-on-exec: no child but the watchdog holds the
// pipe, so its input ends exactly when the worker's process does.
func startWatchdog() {
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	defer r.Close()
	cmd := exec.Command(watchdogExe)
	cmd.Args = []string{"heddle-childproc-watchdog"}
	cmd.Env = []string{watchdogEnv + "=1"}
	cmd.Dir = "/"
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return
	}
	// It is never waited for: it ends only after the worker (or if
	// something kills it, and then the writes that follow fail, unheard).
	// Waiting would hold a goroutine for the worker's whole life.
	watchdog.mu.Lock()
	watchdog.w = w
	watchdog.mu.Unlock()
}

// tellWatchdog writes one line to the watchdog, when there is one.
func tellWatchdog(op byte, pgid int) {
	watchdog.mu.Lock()
	defer watchdog.mu.Unlock()
	if watchdog.w != nil {
		_, _ = fmt.Fprintf(watchdog.w, "%c%d\n", op, pgid)
	}
}

// Start starts a child built by Command and hands its process group to
// the worker's watchdog, which kills the group if the worker dies without
// having killed it itself (KillGroup), however it dies.
func Start(cmd *exec.Cmd) error {
	watchdog.once.Do(startWatchdog)
	if err := cmd.Start(); err != nil {
		return err
	}
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid && cmd.SysProcAttr.Pgid == 0 {
		tellWatchdog('+', cmd.Process.Pid)
	}
	return nil
}
