package fleet_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/proctest"
)

// A worker is one `heddle serve` process of the fleet, in a process group
// of its own, killed with the test process should that die first.
type worker struct {
	name string // w1, w2, …: its server name in haproxy's configuration
	addr string // 127.0.0.1:PORT
	log  string // the file its stderr is written to

	cmd  *exec.Cmd
	done chan struct{} // closed once the process is reaped

	mu     sync.Mutex
	killed bool
	once   sync.Once // stop's
}

// startWorker starts `heddle serve` in dir with env added to the test's
// environment, on a port the kernel picks, and returns once it listens
// (serve listens only once its runtime is open). The test's cleanup stops
// it (see stop), unless it was stopped before.
func startWorker(t *testing.T, name, dir string, env []string) *worker {
	t.Helper()
	w := &worker{name: name, log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	logf, err := os.Create(w.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(heddleBin, "serve", "--listen", "127.0.0.1:0", "--grace", "2s", "--log-level", "info")
	cmd.Dir = dir
	// A worker built with -race would sleep a second as it exits, for the
	// reports of threads still running; a worker that drained has none.
	cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), env...)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.cmd = cmd
	first := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		first <- line
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() { w.stop(t) })
	select {
	case line := <-first:
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "heddle: serving on http://")
		if !ok {
			t.Fatalf("worker %s printed %q instead of its address; its log:\n%s", name, line, w.tail(40))
		}
		w.addr = addr
	case <-time.After(30 * time.Second):
		t.Fatalf("worker %s did not listen within 30 s; its log:\n%s", name, w.tail(40))
	}
	return w
}

// kill sends SIGKILL to the worker alone, as a machine that loses it
// would, and waits until it is reaped. Its stdio servers are left to
// heddle's own watchdog, which must end them (see descendants).
func (w *worker) kill() {
	w.mu.Lock()
	w.killed = true
	w.mu.Unlock()
	_ = syscall.Kill(w.cmd.Process.Pid, syscall.SIGKILL)
	<-w.done
}

// descendants are the worker's live descendants: its stdio servers and
// their watchdog.
func (w *worker) descendants() []int { return proctest.Descendants(w.cmd.Process.Pid) }

// stop ends a worker that was not killed with SIGTERM (a drain), and
// SIGKILL to its group 15 s later, and fails t if it took that long or if
// the worker reported a data race. It is safe to call more than once and
// from several goroutines: the first call stops the worker.
func (w *worker) stop(t *testing.T) {
	w.once.Do(func() { w.stopOnce(t) })
}

func (w *worker) stopOnce(t *testing.T) {
	w.mu.Lock()
	killed := w.killed
	w.mu.Unlock()
	if !killed {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.done:
			if code := w.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("worker %s exited %d after SIGTERM, want 0 (a drain with nothing in flight)", w.name, code)
			}
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
			<-w.done
			t.Errorf("worker %s did not end within 15 s of SIGTERM", w.name)
		}
	}
	if log := w.tail(0); strings.Contains(log, "WARNING: DATA RACE") {
		t.Errorf("worker %s reported a data race:\n%s", w.name, log)
	} else if t.Failed() {
		t.Logf("worker %s's log:\n%s", w.name, w.tail(30))
	}
}

// tail is the last n lines of the worker's log, or all of it for n 0.
func (w *worker) tail(n int) string { return tailFile(w.log, n) }

// tailFile is the last n lines of a file, or all of it for n 0.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}
