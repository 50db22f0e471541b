package main

import (
	"net"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"incidents-worker": main})
}

// TestScripts runs the worker's scripts in testdata/script: the shipped
// example, which grants the example application's use case, compiles and
// runs with this binary. $EXAMPLE_SERVER is the example servers' command,
// built for the test, and $CLOSED_PORT a port on 127.0.0.1 nothing listens
// on.
func TestScripts(t *testing.T) {
	repo, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/heddle-example-server")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, closed, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			e.Setenv("REPO", repo)
			e.Setenv("EXAMPLE_SERVER", filepath.Join(bin, "heddle-example-server"))
			e.Setenv("CLOSED_PORT", closed)
			return nil
		},
	})
}
