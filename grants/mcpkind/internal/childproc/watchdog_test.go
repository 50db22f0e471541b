package childproc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/proctest"
)

// testWorkerEnv makes the test binary a worker (TestMain): it starts a
// stdio-server-like child with Command and Start, whose own child ignores
// SIGTERM and stdin EOF, prints the child's and the grandchild's pids, and
// waits to be killed.
const testWorkerEnv = "CHILDPROC_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(testWorkerEnv) == "1" {
		os.Exit(testWorker())
	}
	os.Exit(m.Run())
}

func testWorker() int {
	script := `sh -c 'trap "" TERM; exec sleep 300' </dev/null >/dev/null 2>&1 &
echo "$$ $!"
exec sleep 300`
	cmd := Command("sh", []string{"-c", script}, Env(os.LookupEnv, nil), "", os.Stderr)
	cmd.Stdout = os.Stdout
	if err := Start(cmd); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Waits to be killed. Not select {}: once no other goroutine runs, the
	// Go runtime ends a program blocked that way as deadlocked, and the
	// child dies with it before the test looks at it.
	time.Sleep(time.Hour)
	return 0
}

// TestWatchdogOutlivesSIGKILL: when a worker is killed with SIGKILL, its
// child and the child's own child — which ignores SIGTERM and stdin EOF,
// and which the parent-death signal of the child does not reach — are gone
// soon after, and so is the watchdog. Soon is 10 s: the processes are
// meant to die, not to race a loaded machine's scheduler, and each would
// otherwise live 300 s.
func TestWatchdogOutlivesSIGKILL(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	worker := exec.Command(exe, "-test.run=^$")
	worker.Env = append(os.Environ(), testWorkerEnv+"=1")
	worker.Stderr = os.Stderr
	out, err := worker.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = worker.Process.Kill(); _ = worker.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the worker printed %q: %v", line, err)
	}
	var child, grandchild int
	if _, err := fmt.Sscan(line, &child, &grandchild); err != nil {
		t.Fatalf("the worker printed %q: %v", line, err)
	}
	var watchdog int
	for _, p := range proctest.Children(worker.Process.Pid) {
		if p != child {
			watchdog = p
		}
	}
	if watchdog == 0 {
		t.Fatal("the worker has no watchdog process")
	}
	for _, p := range []int{child, grandchild} {
		if !proctest.Alive(p) {
			t.Fatalf("process %d is not running before the worker is killed", p)
		}
	}
	if err := worker.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = worker.Wait()
	killed := time.Now()
	deadline := killed.Add(10 * time.Second)
	for _, p := range []struct {
		name string
		pid  int
	}{{"child", child}, {"grandchild", grandchild}, {"watchdog", watchdog}} {
		for proctest.Alive(p.pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if proctest.Alive(p.pid) {
			t.Errorf("the %s (process %d) outlived the worker's SIGKILL by %v", p.name, p.pid, time.Since(killed).Round(time.Millisecond))
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

// TestWatchdogInput: a group taken back ("-PGID") is no longer
// the watchdog's to kill; the watchdog kills the groups it still holds
// when its input ends.
func TestWatchdogInput(t *testing.T) {
	held := Command("sleep", []string{"60"}, nil, "", nil)
	freed := Command("sleep", []string{"60"}, nil, "", nil)
	for _, c := range []*exec.Cmd{held, freed} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer KillGroup(held)
	defer KillGroup(freed)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(w, "+%d\n+%d\n-%d\nnonsense\n+1\n", held.Process.Pid, freed.Process.Pid, freed.Process.Pid)
	w.Close()
	if code := runWatchdog(r); code != 0 {
		t.Errorf("runWatchdog = %d", code)
	}
	r.Close()
	signal.Reset(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	if err := held.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("a held group: %v, want killed", err)
	}
	if !proctest.Alive(freed.Process.Pid) {
		t.Error("the watchdog killed a group it was told to let go")
	}
}
