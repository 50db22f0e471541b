package runtime_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
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
	testmcpBin = filepath.Join(dir, "heddle-testmcp")
	out, err := exec.Command("go", "build", "-o", testmcpBin, "github.com/heddlehq/heddle/cmd/heddle-testmcp").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the test server: %v\n%s", err, out)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { _ = os.RemoveAll(dir) }))
}

// compilePlan compiles an api.yaml and agents given as name → agent.yaml.
// "$TESTMCP" in api.yaml is replaced by the test server binary's path.
func compilePlan(t testing.TB, api string, agents map[string]string) *plan.Plan {
	t.Helper()
	fsys := fstest.MapFS{"config/api.yaml": {Data: []byte(strings.ReplaceAll(api, "$TESTMCP", testmcpBin))}}
	for name, a := range agents {
		fsys["agents/"+name+"/agent.yaml"] = &fstest.MapFile{Data: []byte(a)}
	}
	cfg, ds := config.Load(config.Options{FS: fsys})
	p, cds := compile.Compile(compile.Input{Config: cfg})
	if ds = append(ds, cds...); ds.HasErrors() {
		t.Fatalf("compile: %v", ds.Err())
	}
	return p
}
