package schemagen

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// comments reads the Go doc comments of the types the schemas are made of,
// so that a key's description is its field's comment and an object's is its
// type's. It parses a package's files the first time one of its types is
// looked up.
type comments struct {
	root   string // the module root directory
	module string // the module path
	pkgs   map[string]map[string]string
	err    error // the first package that could not be read
}

func newComments(root, module string) *comments {
	return &comments{root: root, module: module, pkgs: map[string]map[string]string{}}
}

// lookup returns the description of t (field "") or of its field, with Go
// names turned into the keys operators write.
func (c *comments) lookup(t reflect.Type, field string) string {
	texts := c.pkg(t.PkgPath())
	if field == "" {
		return typeDescription(t.Name(), texts[t.Name()])
	}
	return fieldDescription(t, texts[t.Name()+"."+field])
}

// pkg returns the comments of the package at path, keyed "Type" and
// "Type.Field". A package outside the module has none.
func (c *comments) pkg(path string) map[string]string {
	if texts, ok := c.pkgs[path]; ok {
		return texts
	}
	texts := map[string]string{}
	c.pkgs[path] = texts
	rel, ok := strings.CutPrefix(path, c.module)
	if !ok || (rel != "" && rel[0] != '/') {
		return texts
	}
	dir := filepath.Join(c.root, filepath.FromSlash(strings.TrimPrefix(rel, "/")))
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no Go files in %s", dir)
	}
	if err != nil {
		c.fail(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			c.fail(err)
			continue
		}
		f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
		if err != nil {
			c.fail(err)
			continue
		}
		collect(f, texts)
	}
	return texts
}

func (c *comments) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// collect records the doc comment of every type declared in f and of every
// field of its struct types.
func collect(f *ast.File, texts map[string]string) {
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			cg := ts.Doc
			if cg == nil && len(gd.Specs) == 1 {
				cg = gd.Doc
			}
			texts[ts.Name.Name] = cg.Text()
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			last := "" // the comment of the fields before, which may name the next ones
			for _, fl := range st.Fields.List {
				text := fl.Doc.Text()
				if text == "" {
					text = fl.Comment.Text()
				}
				if text != "" {
					last = text
				}
				for _, n := range fl.Names {
					if text == "" && names(last, n.Name) {
						// "Command, Args, Env and Dir configure a stdio server."
						texts[ts.Name.Name+"."+n.Name] = last
						continue
					}
					texts[ts.Name.Name+"."+n.Name] = text
				}
			}
		}
	}
}

// names reports whether text names the Go identifier name.
func names(text, name string) bool {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(text)
}

// typeDescription is the first sentence of a type's comment, without the
// type's Go name: "ServerConfig is one entry of …" becomes "One entry of …".
func typeDescription(name, text string) string {
	return withoutSubject(name, new(doc.Package).Synopsis(text))
}

// withoutSubject drops a type's Go name when it is the subject of "is" or
// "are": the description belongs to the object it is given to.
func withoutSubject(name, text string) string {
	for _, verb := range []string{" is ", " are "} {
		if rest, ok := strings.CutPrefix(text, name+verb); ok {
			return upperFirst(rest)
		}
	}
	return text
}

var wordRE = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)

// fieldDescription is a field's comment on one line, with the Go names of
// t's fields replaced by their keys: "TimeoutMS is the transport wait"
// becomes "timeout_ms is the transport wait". (The name stays: dropping it
// would leave a sentence that begins with a value, "http, sse or stdio".)
func fieldDescription(t reflect.Type, text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if text == "" {
		return ""
	}
	keys := map[string]string{}
	for i := range t.NumField() {
		f := t.Field(i)
		if key := keyOf(f); key != "" {
			keys[f.Name] = key
		}
	}
	return wordRE.ReplaceAllStringFunc(text, func(w string) string {
		if key, ok := keys[w]; ok {
			return key
		}
		return w
	})
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
