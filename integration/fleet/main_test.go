package fleet_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heddlehq/heddle/internal/proctest"
	"github.com/heddlehq/heddle/internal/testmcp"
)

// The binaries the fleet runs, built once: the stock heddle command and the
// test MCP server its workers start over stdio. Both are empty when the
// fleet's packages are missing (TestFleet then skips, or fails under CI).
var heddleBin, testmcpBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "heddle-fleet")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		if missing() == "" {
			if err := build(dir); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		code := m.Run()
		// No worker, balancer or store outlives the tests.
		if left := proctest.WaitGone(proctest.Descendants(os.Getpid()), 10*time.Second); len(left) > 0 {
			for _, pid := range left {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				fmt.Fprintf(os.Stderr, "fleet: process %d outlived the tests: %q\n", pid, cmdline)
			}
			code = 1
		}
		return code
	}()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "fleet: goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// build builds the binaries into dir. Under -race the workers are built
// with -race too: the packages are the ones this test binary already
// compiled, and a race in a worker fails the test (see worker.stop).
func build(dir string) error {
	var err error
	if testmcpBin, err = testmcp.Build(dir); err != nil {
		return err
	}
	heddleBin = filepath.Join(dir, "heddle")
	args := []string{"build", "-o", heddleBin}
	if raceBuild {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, "github.com/heddlehq/heddle/cmd/heddle")...).CombinedOutput(); err != nil {
		return fmt.Errorf("building heddle: %v\n%s", err, out)
	}
	return nil
}
