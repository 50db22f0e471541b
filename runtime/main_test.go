package runtime_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/plan"
	"go.uber.org/goleak"
)

// testmcpBin is the test server binary, built once.
var testmcpBin string

func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == testmcp.SleepForeverArg {
		testmcp.SleepForever()
		return
	}
	dir, err := os.MkdirTemp("", "heddle-runtime-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if testmcpBin, err = testmcp.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { _ = os.RemoveAll(dir) }))
}

// compilePlan compiles an api.yaml and agents given as name → agent.yaml.
// "$TESTMCP" in api.yaml is replaced by the test server binary's path.
func compilePlan(t testing.TB, api string, agents map[string]string) *plan.Plan {
	t.Helper()
	return plantest.Must(t, strings.ReplaceAll(api, "$TESTMCP", testmcpBin), agents)
}
