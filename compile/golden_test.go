package compile_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds, both halves

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
)

var update = flag.Bool("update", false, "rewrite the want.diags section of golden files")

// fixture is one golden case: a tree of configuration files and the
// diagnostics compiling it must give.
type fixture struct {
	file    string
	archive *txtar.Archive
	fs      fstest.MapFS
	opts    config.Options
	want    string
}

// Special sections of a fixture; every other section is a file.
const (
	secWant     = "want.diags"
	secEnv      = "env"      // HEDDLE_ variables, one NAME=value per line
	secArgs     = "args"     // options: env=NAME, usecases=a,b
	secUsecases = "usecases" // registered use-case keys, one per line
	secNever    = "never"    // values no diagnostic and no plan may show, one per line
)

func readFixture(t *testing.T, file string) *fixture {
	t.Helper()
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{file: file, archive: ar, fs: fstest.MapFS{}}
	for _, sec := range ar.Files {
		switch sec.Name {
		case secWant:
			f.want = string(sec.Data)
		case secEnv:
			for _, line := range strings.Split(strings.TrimSpace(string(sec.Data)), "\n") {
				if line = strings.TrimSpace(line); line != "" {
					f.opts.Environ = append(f.opts.Environ, line)
				}
			}
		case secArgs:
			for _, line := range strings.Fields(string(sec.Data)) {
				k, v, _ := strings.Cut(line, "=")
				switch k {
				case "env":
					f.opts.Env = v
				default:
					t.Fatalf("%s: unknown arg %q", file, k)
				}
			}
		case secUsecases, secNever:
		default:
			f.fs[sec.Name] = &fstest.MapFile{Data: sec.Data}
		}
	}
	f.opts.FS = f.fs
	return f
}

func (f *fixture) usecases() []string { return f.lines(secUsecases) }

// lines returns the words of section name, or nil.
func (f *fixture) lines(name string) []string {
	for _, sec := range f.archive.Files {
		if sec.Name == name {
			return strings.Fields(string(sec.Data))
		}
	}
	return nil
}

// format prints diagnostics one per line: CODE file:line path.
func format(ds diag.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		loc := "-"
		if d.Range != nil {
			loc = d.Range.File
			if d.Range.Line > 0 {
				loc += fmt.Sprintf(":%d", d.Range.Line)
			}
		}
		path := d.Path
		if path == "" {
			path = "-"
		}
		fmt.Fprintf(&b, "%s %s %s\n", d.Code, loc, path)
	}
	return b.String()
}

func run(f *fixture) diag.Diagnostics {
	cfg, ds := config.Load(f.opts)
	_, cds := compile.Compile(compile.Input{Config: cfg, Usecases: f.usecases()})
	ds = append(ds, cds...)
	ds.Sort()
	return ds
}

func goldenFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	codes, err := filepath.Glob("testdata/codes/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	return append(files, codes...)
}

// TestGolden compiles every fixture and compares the codes, files, lines and
// paths of its diagnostics (never their wording) with want.diags.
func TestGolden(t *testing.T) {
	for _, file := range goldenFiles(t) {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			f := readFixture(t, file)
			got := format(run(f))
			if *update {
				writeWant(t, f, got)
				return
			}
			if diff := cmp.Diff(f.want, got); diff != "" {
				t.Errorf("%s: diagnostics differ (-want +got):\n%s", file, diff)
			}
		})
	}
}

// TestGoldenNeverShown compiles every fixture with a never section and
// fails when one of its values shows in a diagnostic (summary, detail or
// path) or in the plan, when there is one: a credential written where it
// does not belong is refused without being repeated.
func TestGoldenNeverShown(t *testing.T) {
	for _, file := range goldenFiles(t) {
		f := readFixture(t, file)
		never := f.lines(secNever)
		if len(never) == 0 {
			continue
		}
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			cfg, ds := config.Load(f.opts)
			p, cds := compile.Compile(compile.Input{Config: cfg, Usecases: f.usecases()})
			var out strings.Builder
			for _, d := range append(ds, cds...) {
				fmt.Fprintf(&out, "%s\n%s\n", d.Error(), d.Detail)
			}
			if p != nil {
				b, err := json.Marshal(p)
				if err != nil {
					t.Fatal(err)
				}
				out.Write(b)
			}
			for _, v := range never {
				if strings.Contains(out.String(), v) {
					t.Errorf("%s: %q is shown:\n%s", file, v, out.String())
				}
			}
		})
	}
}

func writeWant(t *testing.T, f *fixture, got string) {
	t.Helper()
	found := false
	for i := range f.archive.Files {
		if f.archive.Files[i].Name == secWant {
			f.archive.Files[i].Data = []byte(got)
			found = true
		}
	}
	if !found {
		f.archive.Files = append(f.archive.Files, txtar.File{Name: secWant, Data: []byte(got)})
	}
	if err := os.WriteFile(f.file, txtar.Format(f.archive), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEveryCompileCodeHasAFixture checks that each compile-time code in the
// catalogue of the built-in kinds has testdata/codes/<CODE>.txtar, and that
// the fixture produces it.
func TestEveryCompileCodeHasAFixture(t *testing.T) {
	for _, e := range grants.Default().Catalog() {
		if e.Phase != diag.PhaseCompile {
			continue
		}
		file := filepath.Join("testdata", "codes", string(e.Code)+".txtar")
		if _, err := os.Stat(file); err != nil {
			t.Errorf("%s has no fixture %s", e.Code, file)
			continue
		}
		f := readFixture(t, file)
		if !slices.Contains(run(f).Codes(), e.Code) {
			t.Errorf("%s does not produce %s", file, e.Code)
		}
	}
}

// TestFixturesParse guards against fixtures whose YAML is accidentally
// broken: only fixtures that say so in their comment may give CONFIG_PARSE.
func TestFixturesParse(t *testing.T) {
	for _, file := range goldenFiles(t) {
		f := readFixture(t, file)
		if bytes.Contains(f.archive.Comment, []byte("CONFIG_PARSE")) {
			continue
		}
		if slices.Contains(run(f).Codes(), diag.ConfigParse) {
			t.Errorf("%s: unexpected CONFIG_PARSE", file)
		}
	}
}
