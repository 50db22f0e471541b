package main

import (
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"incidents-worker": main})
}

// TestScripts runs the worker's scripts in testdata/script: the shipped
// example, which grants the example application's use case, compiles and
// runs with this binary.
func TestScripts(t *testing.T) {
	repo, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			e.Setenv("REPO", repo)
			return nil
		},
	})
}
