package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/builtin"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/serve"
)

// root is the module root, seen from this package's directory.
const root = "../.."

// TestErrorsDocUpToDate fails when docs/errors.md is not what the generator
// produces from the catalogue and the compile fixtures.
func TestErrorsDocUpToDate(t *testing.T) {
	want, err := ErrorsDoc(root)
	if err != nil {
		t.Fatalf("generating %s: %v", ErrorsFile, err)
	}
	got, err := os.ReadFile(filepath.Join(root, ErrorsFile))
	if err != nil {
		t.Fatalf("%v; run: go run ./internal/gendocs", err)
	}
	if hint := DiffHint(got, want); hint != "" {
		t.Errorf("%s is stale: %s\nrun: go run ./internal/gendocs", ErrorsFile, hint)
	}
}

// TestOpenAPIDocUpToDate fails when docs/openapi.json is not package
// serve's document.
func TestOpenAPIDocUpToDate(t *testing.T) {
	got, err := os.ReadFile(filepath.Join(root, OpenAPIFile))
	if err != nil {
		t.Fatalf("%v; run: go run ./internal/gendocs", err)
	}
	if hint := DiffHint(got, serve.OpenAPI); hint != "" {
		t.Errorf("%s is stale: %s\nrun: go run ./internal/gendocs", OpenAPIFile, hint)
	}
}

// declaredCodes parses package diag and the built-in kinds' config halves
// (grants/*kind) and returns every constant of type Code (diag.Code in a
// kind's package), by its name qualified with its package's
// (diag.MCPServerUnknown), with its value.
func declaredCodes(t *testing.T) map[string]diag.Code {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "diag", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := filepath.Glob(filepath.Join(root, "grants", "*kind", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, kinds...)
	out := map[string]diag.Code{}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			// In a const block a spec without type and values repeats the
			// previous spec's.
			var typ ast.Expr
			var values []ast.Expr
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if vs.Type != nil || len(vs.Values) > 0 {
					typ, values = vs.Type, vs.Values
				}
				if !isCodeType(typ) {
					continue
				}
				for i, name := range vs.Names {
					if i >= len(values) {
						t.Fatalf("%s: constant %s has no value", fset.Position(name.Pos()), name.Name)
					}
					lit, ok := values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: Code constant %s is not a string literal", fset.Position(name.Pos()), name.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[f.Name.Name+"."+name.Name] = diag.Code(v)
				}
			}
		}
	}
	return out
}

// isCodeType reports whether typ is Code, as package diag writes it, or
// diag.Code, as a kind's package does.
func isCodeType(typ ast.Expr) bool {
	switch typ := typ.(type) {
	case *ast.Ident:
		return typ.Name == "Code"
	case *ast.SelectorExpr:
		pkg, ok := typ.X.(*ast.Ident)
		return ok && pkg.Name == "diag" && typ.Sel.Name == "Code"
	}
	return false
}

// TestEveryCodeDocumented fails when a Code constant declared in package
// diag or a built-in kind's is missing from the built-in set's catalogue
// (and so from docs/errors.md), and when the catalogue documents a code that
// is not declared or documents one twice.
func TestEveryCodeDocumented(t *testing.T) {
	declared := declaredCodes(t)
	if len(declared) == 0 {
		t.Fatal("found no Code constants in package diag")
	}
	t.Logf("%d Code constants declared", len(declared))
	kinds := builtin.Default().Grants()
	values := map[diag.Code]string{}
	for name, code := range declared {
		if other, dup := values[code]; dup {
			t.Errorf("constants %s and %s share the code %s", other, name, code)
		}
		values[code] = name
		if _, ok := kinds.Entry(code); !ok {
			t.Errorf("%s (%s) is not in the catalogue (diag/catalog.go, or the codes.go of the one kind that reports it): document it, then run go run ./internal/gendocs", code, name)
		}
	}
	seen := map[diag.Code]bool{}
	for _, e := range Catalog() {
		if seen[e.Code] {
			t.Errorf("%s is catalogued twice", e.Code)
		}
		seen[e.Code] = true
		if _, ok := values[e.Code]; !ok {
			t.Errorf("%s is catalogued but no Code constant declares it", e.Code)
		}
	}
}

// TestEveryCodeHasASection checks the generated text itself: one section
// per code, each with a meaning, an example and a fix.
func TestEveryCodeHasASection(t *testing.T) {
	doc, err := ErrorsDoc(root)
	if err != nil {
		t.Fatal(err)
	}
	sections := strings.Split(string(doc), "\n## ")
	for _, e := range Catalog() {
		i := slices.IndexFunc(sections, func(s string) bool { return strings.HasPrefix(s, string(e.Code)+"\n") })
		if i < 0 {
			t.Errorf("%s has no section", e.Code)
			continue
		}
		s := sections[i]
		if !bytes.Contains(doc, []byte(`<a id="`+string(e.Code)+`"></a>`)) {
			t.Errorf("%s has no anchor", e.Code)
		}
		for _, part := range []string{"**Meaning.**", "xample", "**Fix.**"} {
			if !strings.Contains(s, part) {
				t.Errorf("section %s lacks %q", e.Code, part)
			}
		}
		if e.Phase == diag.PhaseCompile && !strings.Contains(s, "\n"+string(e.Code)+" ") {
			t.Errorf("section %s: the expected diagnostics do not show the code", e.Code)
		}
	}
}

func TestDiffHint(t *testing.T) {
	tests := []struct {
		got, want, hint string
	}{
		{"a\nb\n", "a\nb\n", ""},
		{"a\nb\n", "a\nc\n", "line 2"},
		{"a\n", "a\nb\n", "line 2"},
		{"a\nb\nc", "a\nb", "line 3"},
	}
	for _, tt := range tests {
		hint := DiffHint([]byte(tt.got), []byte(tt.want))
		if tt.hint == "" && hint != "" || !strings.Contains(hint, tt.hint) {
			t.Errorf("DiffHint(%q, %q) = %q, want it to mention %q", tt.got, tt.want, hint, tt.hint)
		}
	}
}
