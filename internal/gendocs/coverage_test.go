package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/diag"
)

// TestEveryCodeIsTested fails when a catalogued code is asserted by no test.
// Compile-time codes are covered by their golden fixtures (checked in
// package compile); every other code must be asserted in a Go test — as
// diag.<Constant> (or <kind package>.<Constant>) in a *_test.go file that is
// not this one — or expected in a command-line script under testdata/script.
func TestEveryCodeIsTested(t *testing.T) {
	consts := map[string]string{} // CODE → constant, qualified: diag.ToolUnknown
	for name, code := range declaredCodes(t) {
		consts[string(code)] = name
	}
	var corpus strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", ".git", "docs":
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		isScript := strings.Contains(rel, filepath.Join("testdata", "script")) && strings.HasSuffix(rel, ".txtar")
		isTest := strings.HasSuffix(rel, "_test.go") && !strings.HasPrefix(rel, filepath.Join("internal", "gendocs"))
		if !isScript && !isTest {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		corpus.Write(b)
		corpus.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	text := corpus.String()
	for _, e := range Catalog() {
		if e.Phase == diag.PhaseCompile {
			continue
		}
		name := consts[string(e.Code)]
		asserted := name != "" && regexp.MustCompile(regexp.QuoteMeta(name)+`\b`).MatchString(text)
		scripted := regexp.MustCompile(`(?m)^!? ?(stdout|stderr) .*` + string(e.Code)).MatchString(text)
		if !asserted && !scripted {
			t.Errorf("%s (%s) is asserted by no test", e.Code, e.Phase)
		}
	}
}
