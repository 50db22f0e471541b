package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// embeddingDoc is the guide to an application's own worker.
const embeddingDoc = "docs/embedding.md"

// docFileRE matches a file the embedding guide shows: a line "`path`:" or
// "`path`, …:" followed by a fenced block.
var docFileRE = regexp.MustCompile("(?ms)^`([a-z./]+)`[^\n]*:\n\n```[a-z]*\n(.*?)^```")

// consoleRE matches a console block.
var consoleRE = regexp.MustCompile("(?ms)^```console\n(.*?)^```")

// TestEmbeddingWorker builds the worker docs/embedding.md shows, in a module
// of its own that requires this one, and runs the commands the guide shows
// on the configuration it shows: each must print exactly what the guide
// says it prints.
func TestEmbeddingWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a worker binary; skipped with -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("go is not on PATH (required with CI=true): %v", err)
		}
		t.Skipf("go is not on PATH: %v", err)
	}
	repo, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	doc := readDoc(t, embeddingDoc)
	dir := t.TempDir()
	files := map[string]bool{}
	for _, m := range docFileRE.FindAllStringSubmatch(doc, -1) {
		writeFile(t, filepath.Join(dir, m[1]), m[2])
		files[m[1]] = true
	}
	for _, want := range []string{"main.go", "config/api.yaml", "agents/desk/agent.yaml"} {
		if !files[want] {
			t.Fatalf("%s shows no %s (found %v)", embeddingDoc, want, files)
		}
	}
	writeFile(t, filepath.Join(dir, "go.mod"), "module example.com/desk\n\ngo 1.26.0\n\n"+
		"require github.com/heddlehq/heddle v0.0.0\n\n"+
		"replace github.com/heddlehq/heddle => "+repo+"\n")
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "go.sum"), string(sum))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, goBin, "build", "-o", "desk-worker", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the worker of %s: %v\n%s", embeddingDoc, err, out)
	}

	ran := map[string]bool{}
	for _, block := range consoleRE.FindAllStringSubmatch(doc, -1) {
		for _, c := range splitConsole(block[1]) {
			if !strings.HasPrefix(c.command, "./desk-worker ") {
				t.Errorf("%s: a console block runs %q, which this test does not run", embeddingDoc, c.command)
				continue
			}
			cmd := exec.CommandContext(ctx, "sh", "-c", c.command)
			cmd.Dir = dir
			out, _ := cmd.CombinedOutput()
			if got := strings.TrimRight(string(out), "\n"); got != c.output {
				t.Errorf("%s: $ %s\nprints:\n%s\nthe guide shows:\n%s", embeddingDoc, c.command, got, c.output)
			}
			ran[strings.Fields(c.command)[1]] = true
		}
	}
	for _, want := range []string{"check", "call"} {
		if !ran[want] {
			t.Errorf("%s shows no %q run", embeddingDoc, want)
		}
	}
}

// consoleCommand is one "$ command" of a console block and the lines shown
// after it.
type consoleCommand struct{ command, output string }

func splitConsole(block string) []consoleCommand {
	var cs []consoleCommand
	var out []string
	flush := func() {
		if len(cs) > 0 {
			cs[len(cs)-1].output = strings.Join(out, "\n")
		}
		out = nil
	}
	for _, l := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			flush()
			cs = append(cs, consoleCommand{command: c})
			continue
		}
		out = append(out, l)
	}
	flush()
	return cs
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
