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
	steps, err := parseDoc(embeddingDoc, doc)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]bool{}
	for _, st := range steps {
		if st.kind != "console" || st.notRun != "" {
			continue
		}
		for _, c := range st.commands {
			if !strings.HasPrefix(c.command, "./desk-worker ") {
				t.Errorf("%s:%d: a console block runs %q, which this test does not run", embeddingDoc, c.line, c.command)
				continue
			}
			cmd := exec.CommandContext(ctx, "sh", "-c", c.command)
			cmd.Dir = dir
			out, _ := cmd.CombinedOutput()
			got := outputLines(string(out))
			if m := matchOutput(c.output, got); m != nil {
				t.Error(describeMismatch(embeddingDoc, c, got, m))
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
