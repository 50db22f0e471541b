package heddlecmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/rogpeppe/go-internal/testscript"
)

// testmcpBin is the test MCP server binary, built once for the scripts.
var testmcpBin string

func TestMain(m *testing.M) {
	testscript.Main(mainWithServer{m}, map[string]func(){
		"heddle": func() { os.Exit(Run(os.Args[1:], os.Stdout, os.Stderr, Options{})) },
	})
}

// mainWithServer builds the test server binary before the tests run.
type mainWithServer struct{ m *testing.M }

func (w mainWithServer) Run() int {
	dir, err := os.MkdirTemp("", "heddle-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if testmcpBin, err = testmcp.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return w.m.Run()
}

// TestScripts runs the command-line contract tests in testdata/script: each
// script asserts exit codes, and codes on stdout or stderr.
func TestScripts(t *testing.T) {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			e.Setenv("REPO", repo)
			// The test server is on PATH as heddle-testmcp.
			e.Setenv("PATH", filepath.Dir(testmcpBin)+string(os.PathListSeparator)+e.Getenv("PATH"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"diff-lines": diffLines,
		},
	})
}

// diffLines prints a line diff of two files: "- line" for lines only in the
// first, "+ line" for lines only in the second.
func diffLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: diff-lines a b")
	}
	a := strings.Split(ts.ReadFile(args[0]), "\n")
	b := strings.Split(ts.ReadFile(args[1]), "\n")
	// Longest common subsequence, then walk it.
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			fmt.Fprintf(ts.Stdout(), "+ %s\n", b[j])
			j++
		default:
			fmt.Fprintf(ts.Stdout(), "- %s\n", a[i])
			i++
		}
	}
}
