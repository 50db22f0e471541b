package main

import (
	"context"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/modtest"
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
	doc := readDoc(t, embeddingDoc)
	files := map[string]string{}
	for _, m := range docFileRE.FindAllStringSubmatch(doc, -1) {
		files[m[1]] = m[2]
	}
	for _, want := range []string{"main.go", "config/api.yaml", "agents/desk/agent.yaml"} {
		if _, ok := files[want]; !ok {
			t.Fatalf("%s shows no %s (found %v)", embeddingDoc, want, slices.Sorted(maps.Keys(files)))
		}
	}
	dir := modtest.Build(t, "example.com/desk", "desk-worker", files)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
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
