package faults_test

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds and strategies
	"github.com/heddlehq/heddle/internal/proctest"
	"github.com/heddlehq/heddle/internal/testmcp"
)

// The binaries the matrix runs, built once: the test MCP server, the stock
// heddle command, the example auth plugin and a misbehaving one, with
// their checksums.
var (
	testmcpBin, heddleBin      string
	pluginBin, pluginSum       string
	badPluginBin, badPluginSum string
)

// all runs the slow cells too (HEDDLE_FAULTS=all, make faults).
var all = os.Getenv("HEDDLE_FAULTS") == "all"

func TestMain(m *testing.M) {
	flag.Parse()
	// The cells mostly wait on deadlines: run more of them at once than
	// there are cores, unless -parallel says otherwise.
	if f := flag.Lookup("test.parallel"); f != nil && f.Value.String() == fmt.Sprint(defaultParallel()) {
		_ = flag.Set("test.parallel", "16")
	}
	dir, err := os.MkdirTemp("", "heddle-faults")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		if err := build(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fds := openFDs()
		code := m.Run()
		// No process of the matrix outlives it, and its descriptors are
		// back to what they were (a little slack for the runtime's own).
		if left := proctest.WaitGone(children(), 10*time.Second); len(left) > 0 {
			for _, pid := range left {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				fmt.Fprintf(os.Stderr, "faults: process %d outlived the tests: %q\n", pid, cmdline)
			}
			code = 1
		}
		if n := waitFDs(fds+4, 5*time.Second); n > fds+4 {
			fmt.Fprintf(os.Stderr, "faults: %d file descriptors open after the tests, %d before\n", n, fds)
			code = 1
		}
		return code
	}()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "faults: goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func defaultParallel() int { return runtime.GOMAXPROCS(0) }

// build builds the binaries into dir.
func build(dir string) error {
	var err error
	if testmcpBin, err = testmcp.Build(dir); err != nil {
		return err
	}
	heddleBin = filepath.Join(dir, "heddle")
	pluginBin = filepath.Join(dir, "heddle-auth-agent-session")
	badPluginBin = filepath.Join(dir, "testplugin")
	for bin, pkg := range map[string]string{
		heddleBin:    "github.com/heddlehq/heddle/cmd/heddle",
		pluginBin:    "github.com/heddlehq/heddle/examples/auth-agent-session",
		badPluginBin: "github.com/heddlehq/heddle/auth/plugin/testdata/testplugin",
	} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", pkg, err, out)
		}
	}
	if pluginSum, err = fileSum(pluginBin); err != nil {
		return err
	}
	badPluginSum, err = fileSum(badPluginBin)
	return err
}

func fileSum(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// openFDs is how many file descriptors the process has open.
func openFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

// waitFDs waits up to d for the open descriptors to fall to n, and returns
// how many there are.
func waitFDs(n int, d time.Duration) int {
	end := time.Now().Add(d)
	for {
		got := openFDs()
		if got <= n || time.Now().After(end) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// children are the test process's descendants but the stdio servers'
// watchdog, which outlives the runtimes by design (it kills a server's
// process group should this process die) and exits with it.
func children() []int {
	var out []int
	for _, pid := range proctest.Descendants(os.Getpid()) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if !strings.HasPrefix(string(cmdline), "heddle-childproc-watchdog") {
			out = append(out, pid)
		}
	}
	return out
}
