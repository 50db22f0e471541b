package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// securityDoc maps the OWASP lists to what heddle does and the tests that
// prove it.
const securityDoc = "docs/security.md"

// testRefRE matches a test reference of docs/security.md: the package's
// directory relative to the module root, a dot, the test function, and
// optionally a subtest after a slash (integration/faults.TestFaults/x).
var testRefRE = regexp.MustCompile(`^([a-z0-9_-]+(?:/[a-z0-9_-]+)*)\.(Test[A-Za-z0-9_]*)(?:/.+)?$`)

// TestSecurityDocTests fails when a row of a table of docs/security.md
// whose last column is "test" cites a test that does not exist — the
// package directory is missing, or none of its *_test.go files declares the
// top-level function — or when a row cites no test and says neither "not
// done" nor "out of scope". Every code span of the column must be a
// reference; a subtest is not checked beyond its function.
func TestSecurityDocTests(t *testing.T) {
	funcs := map[string]map[string]bool{} // directory → its test files' functions; nil when it is missing
	rows := 0
	for _, row := range tableBody(readDoc(t, securityDoc), "test") {
		rows++
		id := row[0]
		cited := 0
		for _, m := range codeSpanRE.FindAllStringSubmatch(row[len(row)-1], -1) {
			ref := testRefRE.FindStringSubmatch(m[1])
			if ref == nil {
				t.Errorf("%s: row %s: %q is not a test reference (package.TestName)", securityDoc, id, m[1])
				continue
			}
			cited++
			dir, fn := ref[1], ref[2]
			if _, seen := funcs[dir]; !seen {
				funcs[dir] = testFuncs(t, dir)
			}
			switch {
			case funcs[dir] == nil:
				t.Errorf("%s: row %s: %s: there is no package directory %s", securityDoc, id, m[1], dir)
			case !funcs[dir][fn]:
				t.Errorf("%s: row %s: %s: no func %s in %s/*_test.go", securityDoc, id, m[1], fn, dir)
			}
		}
		text := strings.ToLower(strings.Join(row, " "))
		if cited == 0 && !strings.Contains(text, "not done") && !strings.Contains(text, "out of scope") {
			t.Errorf("%s: row %s cites no test and says neither \"not done\" nor \"out of scope\"", securityDoc, id)
		}
	}
	if rows < 31 {
		t.Errorf("%s: found %d rows, want the 10 of the OWASP MCP Top 10 and the 21 of AISVS C10; has the tables' form changed?", securityDoc, rows)
	}
}

// tableBody returns the trimmed cells of every body row of the Markdown
// tables in doc whose header's last cell is last. An escaped pipe (\|)
// stays within its cell.
func tableBody(doc, last string) [][]string {
	var rows [][]string
	in := false // in the body of a table with that header
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "|") {
			in = false
			continue
		}
		cells := strings.Split(strings.Trim(strings.ReplaceAll(line, `\|`, "\x00"), "|"), "|")
		for i, c := range cells {
			cells[i] = strings.TrimSpace(strings.ReplaceAll(c, "\x00", `\|`))
		}
		switch {
		case strings.HasPrefix(line, "| ---"):
		case !in:
			in = cells[len(cells)-1] == last // a header
		default:
			rows = append(rows, cells)
		}
	}
	return rows
}

// testFuncs returns the names of the top-level functions declared in the
// *_test.go files of dir, a directory relative to the module root, or nil
// when dir is not a directory.
func testFuncs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	path := filepath.Join(root, filepath.FromSlash(dir))
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		return nil
	}
	files, err := filepath.Glob(filepath.Join(path, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("parsing %s: %v", file, err)
			continue
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil {
				names[fd.Name.Name] = true
			}
		}
	}
	return names
}
