package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/builtin"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/heddlecmd"
)

// These tests keep the user documentation beyond docs/configuration.md
// honest: the codes it names link to docs/errors.md, its YAML examples parse,
// the tests docs/reliability.md cites exist, and the README's table of
// commands is the command's own list.

// userDocs are the documents whose codes must link and whose YAML must
// parse, besides docs/configuration.md and docs/getting-started.md (checked
// by TestCodeLinks and TestDocYAMLParses).
var userDocs = []string{
	"README.md",
	configDoc,
	"docs/getting-started.md",
	"docs/architecture.md",
	"docs/operations.md",
	"docs/reliability.md",
	"docs/auth.md",
	"docs/policies.md",
	embeddingDoc,
	securityDoc,
}

// anyCodeLinkRE matches a link to a code's section of errors.md, from docs/ or from the repository's
// root (docs/errors.md#CODE), as README.md writes them.
var anyCodeLinkRE = regexp.MustCompile("\\[`?([A-Z0-9_]+)`?\\]\\((?:docs/)?errors\\.md#([A-Za-z0-9_]+)\\)")

// TestUserDocCodeLinks fails when a user document names a diagnostic code in
// its text without linking it to its section of docs/errors.md, or links to
// a code that does not exist. Fenced blocks (program output) are exempt.
func TestUserDocCodeLinks(t *testing.T) {
	kinds := builtin.Default().Grants()
	for _, name := range userDocs {
		doc := fencedRE.ReplaceAllString(readDoc(t, name), "")
		rest := anyCodeLinkRE.ReplaceAllStringFunc(doc, func(link string) string {
			m := anyCodeLinkRE.FindStringSubmatch(link)
			if m[1] != m[2] {
				t.Errorf("%s: link text %s points at #%s", name, m[1], m[2])
			}
			if _, ok := kinds.Entry(diag.Code(m[2])); !ok {
				t.Errorf("%s: link to errors.md#%s, which is not a code", name, m[2])
			}
			return ""
		})
		for _, w := range codeWordRE.FindAllString(rest, -1) {
			if _, ok := kinds.Entry(diag.Code(w)); ok {
				t.Errorf("%s: code %s is mentioned without a link to errors.md#%s", name, w, w)
			}
		}
	}
}

// TestUserDocYAMLParses fails when a YAML example in a user document does
// not parse the way heddle parses configuration.
func TestUserDocYAMLParses(t *testing.T) {
	blockRE := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	for _, name := range userDocs {
		for i, m := range blockRE.FindAllStringSubmatch(readDoc(t, name), -1) {
			if _, ds := config.ParseYAML(name, []byte(m[1])); ds.HasErrors() {
				t.Errorf("%s: YAML example %d does not parse: %v\n%s", name, i+1, ds.Err(), m[1])
			}
		}
	}
}

var (
	testFileRE = regexp.MustCompile(`^[a-z0-9_./-]+(_test\.go|\.txtar)$`)
	testNameRE = regexp.MustCompile(`^(Test[A-Za-z0-9_]*)(?:/(.+))?$`)
)

// TestReliabilityTestsExist fails when a row of a table in
// docs/reliability.md cites a test that does not exist. In the "proved by"
// cell, a test file (`runtime/startup_test.go`, or a script
// `…/testdata/script/x.txtar`) is followed by the tests it holds
// (`TestName`, or `TestName/subtest` for a t.Run subtest). A script is run by
// the TestScripts of its package. A row that cites no test must say so
// ("no test").
func TestReliabilityTestsExist(t *testing.T) {
	const name = "docs/reliability.md"
	rows := 0
	faultTable := false // the rows of a table whose first column is the fault
	for _, line := range strings.Split(readDoc(t, name), "\n") {
		if !strings.HasPrefix(line, "|") {
			faultTable = false
			continue
		}
		if strings.HasPrefix(line, "| fault") {
			faultTable = true
			continue
		}
		if !faultTable || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		cell := cells[len(cells)-1]
		rows++
		file, cited := "", 0
		for _, m := range codeSpanRE.FindAllStringSubmatch(cell, -1) {
			span := m[1]
			switch {
			case testFileRE.MatchString(span):
				file = span
				b, err := os.ReadFile(filepath.Join(root, file))
				if err != nil {
					t.Errorf("%s: %s does not exist", name, file)
					file = ""
				} else if strings.HasSuffix(file, ".txtar") && !bytes.Contains(b, []byte("exec heddle")) {
					t.Errorf("%s: %s is not a command-line script", name, file)
				}
			case testNameRE.MatchString(span):
				cited++
				if file == "" {
					t.Errorf("%s: %s is cited without its file before it", name, span)
					continue
				}
				checkTest(t, name, file, span)
			}
		}
		if cited == 0 && !strings.Contains(cell, "no test") {
			t.Errorf("%s: a row cites no test and does not say so: %s", name, strings.TrimSpace(cells[0]))
		}
	}
	if rows < 20 {
		t.Errorf("%s: found %d rows; has the table's form changed?", name, rows)
	}
}

// checkTest checks that test (TestName or TestName/subtest) is in file. A
// script is run by its package's TestScripts.
func checkTest(t *testing.T, doc, file, test string) {
	t.Helper()
	m := testNameRE.FindStringSubmatch(test)
	fn, sub := m[1], m[2]
	path := filepath.Join(root, file)
	if strings.HasSuffix(file, ".txtar") {
		// testdata/script/x.txtar is run by TestScripts in the package
		// that holds testdata/.
		pkg := filepath.Dir(filepath.Dir(filepath.Dir(path)))
		path = ""
		files, _ := filepath.Glob(filepath.Join(pkg, "*_test.go"))
		for _, f := range files {
			if b, _ := os.ReadFile(f); bytes.Contains(b, []byte("func "+fn+"(")) {
				path = f
			}
		}
		if path == "" || fn != "TestScripts" {
			t.Errorf("%s: %s is not run by %s of its package", doc, file, fn)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return // reported with the file
	}
	if !bytes.Contains(b, []byte("func "+fn+"(")) {
		t.Errorf("%s: %s has no func %s", doc, file, fn)
		return
	}
	if sub != "" && !bytes.Contains(b, []byte(strconv.Quote(sub))) {
		t.Errorf("%s: %s has no subtest %q of %s", doc, file, sub, fn)
	}
}

// TestReadmeCommands fails when the README's table of commands is not
// exactly the list of commands `heddle help` prints.
func TestReadmeCommands(t *testing.T) {
	var out bytes.Buffer
	if code := heddlecmd.Run([]string{"help"}, &out, &out, heddlecmd.Options{}); code != heddlecmd.ExitOK {
		t.Fatalf("heddle help exited %d", code)
	}
	var want []string
	inCommands := false
	cmdRE := regexp.MustCompile(`^  ([a-z]+)\s`)
	for _, l := range strings.Split(out.String(), "\n") {
		switch {
		case l == "Commands:":
			inCommands = true
		case inCommands && l == "":
			inCommands = false
		case inCommands:
			if m := cmdRE.FindStringSubmatch(l); m != nil {
				want = append(want, m[1])
			}
		}
	}
	if len(want) == 0 {
		t.Fatalf("found no commands in heddle help:\n%s", out.String())
	}
	rowRE := regexp.MustCompile("^\\| `heddle ([a-z]+)")
	var got []string
	for _, l := range strings.Split(readDoc(t, "README.md"), "\n") {
		if m := rowRE.FindStringSubmatch(l); m != nil {
			got = append(got, m[1])
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("README.md's command table lists %v; heddle help lists %v", got, want)
	}
}
