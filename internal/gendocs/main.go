// Command gendocs writes docs/errors.md, the reference of heddle's
// diagnostic codes, from the catalogue of the built-in set of kinds (the
// core's entries in package diag, and each kind's own), and
// docs/openapi.json, the front door's API, from package serve's:
//
//	go run ./internal/gendocs          # rewrite both
//	go run ./internal/gendocs -check   # exit 1 if either is stale
//
// It finds the module root by looking upwards from the working directory
// for go.mod, or takes -root. Each code gets a section with its phase,
// severity, meaning, a failing example and the fix. The example of a
// compile-time code is its golden fixture,
// compile/testdata/codes/<CODE>.txtar, shown file by file with the
// diagnostics the golden test expects, so the documented example is known to
// fail exactly that way; start-up and call-time codes use diag.Entry.Example.
//
// The tests of this package fail when docs/errors.md differs from what
// [ErrorsDoc] produces, or docs/openapi.json from serve.OpenAPI, when a Code constant declared in package diag is
// missing from the built-in set's catalogue, and when docs/configuration.md
// leaves a configuration key undocumented.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing/fstest"

	"golang.org/x/tools/txtar"

	"github.com/heddlehq/heddle/builtin"
	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/heddlecmd"
	"github.com/heddlehq/heddle/serve"
)

// ErrorsFile is where the generated reference lives, relative to the module root.
const ErrorsFile = "docs/errors.md"

// FixtureDir holds one failing example per compile-time code, relative to the
// module root.
const FixtureDir = "compile/testdata/codes"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gendocs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", "", "module root (default: the nearest directory upwards holding go.mod)")
	check := fs.Bool("check", false, "report whether "+ErrorsFile+" is up to date instead of writing it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *root == "" {
		r, err := moduleRoot()
		if err != nil {
			fmt.Fprintf(stderr, "gendocs: %v\n", err)
			return 1
		}
		*root = r
	}
	docs, err := generated(*root)
	if err != nil {
		fmt.Fprintf(stderr, "gendocs: %v\n", err)
		return 1
	}
	status := 0
	for _, d := range docs {
		path := filepath.Join(*root, d.file)
		if !*check {
			if err := os.WriteFile(path, d.data, 0o644); err != nil {
				fmt.Fprintf(stderr, "gendocs: %v\n", err)
				return 1
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "gendocs: %v\nrun: go run ./internal/gendocs\n", err)
			status = 1
			continue
		}
		if hint := DiffHint(got, d.data); hint != "" {
			fmt.Fprintf(stderr, "gendocs: %s is stale: %s\nrun: go run ./internal/gendocs\n", d.file, hint)
			status = 1
			continue
		}
		fmt.Fprintf(stdout, "%s is up to date\n", d.file)
	}
	return status
}

// OpenAPIFile is where the front door's OpenAPI document is copied,
// relative to the module root; its source is serve/openapi.json, which
// package serve embeds and serves.
const OpenAPIFile = "docs/openapi.json"

// generated returns every document gendocs writes, with its contents.
func generated(root string) ([]struct {
	file string
	data []byte
}, error) {
	errorsDoc, err := ErrorsDoc(root)
	if err != nil {
		return nil, err
	}
	return []struct {
		file string
		data []byte
	}{{ErrorsFile, errorsDoc}, {OpenAPIFile, serve.OpenAPI}}, nil
}

// moduleRoot returns the nearest directory, from the working directory
// upwards, that holds a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory; give -root")
		}
		dir = parent
	}
}

// DiffHint returns "" when got equals want, and otherwise says where they
// first differ, quoting both lines.
func DiffHint(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; ; i++ {
		switch {
		case i >= len(g):
			return fmt.Sprintf("line %d is missing: want %q", i+1, w[i])
		case i >= len(w):
			return fmt.Sprintf("line %d should not be there: have %q", i+1, g[i])
		case g[i] != w[i]:
			return fmt.Sprintf("first difference at line %d:\n  have %q\n  want %q", i+1, g[i], w[i])
		}
	}
}

var phases = []struct {
	phase diag.Phase
	title string
	about string
}{
	{diag.PhaseCompile, "Compile time",
		"reported by `heddle check` and `heddle plan` (and by `compile.Compile` in a program) while loading and compiling configuration."},
	{diag.PhaseStartup, "Start-up",
		"reported when the runtime opens a plan: resolving secrets, building auth strategies, connecting to servers and checking filters, all under `ai.startup_timeout_ms`."},
	{diag.PhaseCall, "Call time",
		"reported for one tool call, as a refusal the model can read or as an error the caller sees."},
}

// ErrorsDoc generates docs/errors.md from the built-in set's catalogue
// (Catalog) and the compile fixtures under root (the module root). It fails
// when a compile-time code has no fixture or any other code has no example,
// so that no code can be published undocumented.
func ErrorsDoc(root string) ([]byte, error) {
	cat := Catalog()
	var b bytes.Buffer
	b.WriteString("<!-- Code generated by go run ./internal/gendocs; DO NOT EDIT. -->\n\n")
	b.WriteString("# Diagnostic codes\n\n")
	if err := writeIntro(&b); err != nil {
		return nil, err
	}

	b.WriteString("## Contents\n\n")
	for _, ph := range phases {
		fmt.Fprintf(&b, "**%s** — %s\n\n", ph.title, ph.about)
		for _, e := range cat {
			if e.Phase == ph.phase {
				fmt.Fprintf(&b, "- [%s](#%s)", e.Code, e.Code)
				if e.Severity == diag.SeverityWarning {
					b.WriteString(" (warning)")
				}
				b.WriteString("\n")
			}
		}
		b.WriteString("\n")
	}
	for _, e := range cat {
		if !knownPhase(e.Phase) {
			return nil, fmt.Errorf("%s: unknown phase %q", e.Code, e.Phase)
		}
	}

	for _, ph := range phases {
		for _, e := range cat {
			if e.Phase != ph.phase {
				continue
			}
			if err := writeEntry(&b, root, e, ph.title); err != nil {
				return nil, err
			}
		}
	}
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n'), nil
}

// Catalog returns the catalogue docs/errors.md documents: the built-in
// set's, the core's codes then each kind's own, which the document lists
// phase by phase in that order.
func Catalog() []diag.Entry { return builtin.Default().Grants().Catalog() }

func knownPhase(p diag.Phase) bool {
	for _, ph := range phases {
		if ph.phase == p {
			return true
		}
	}
	return false
}

func writeEntry(b *bytes.Buffer, root string, e diag.Entry, phase string) error {
	if strings.TrimSpace(e.Meaning) == "" || strings.TrimSpace(e.Fix) == "" {
		return fmt.Errorf("%s: the catalogue entry needs a Meaning and a Fix", e.Code)
	}
	fmt.Fprintf(b, "<a id=\"%s\"></a>\n\n## %s\n\n", e.Code, e.Code)
	fmt.Fprintf(b, "**Phase:** %s · **Severity:** %s\n\n", phase, e.Severity)
	fmt.Fprintf(b, "**Meaning.** %s\n\n", e.Meaning)
	if e.Phase == diag.PhaseCompile {
		if err := writeFixture(b, root, e.Code); err != nil {
			return err
		}
	} else {
		if strings.TrimSpace(e.Example) == "" {
			return fmt.Errorf("%s: the catalogue entry needs an Example", e.Code)
		}
		b.WriteString("**Example.**")
		writeExample(b, e.Example)
	}
	fmt.Fprintf(b, "**Fix.** %s\n\n", e.Fix)
	return nil
}

var (
	yamlLike  = regexp.MustCompile(`^(\{|[a-z0-9_]+:\s)`)
	shellLike = regexp.MustCompile(`^heddle\s`)
	// expectsMarker is a note to the golden tests in a fixture's comment.
	expectsMarker = regexp.MustCompile(`\s*\(expects [A-Z0-9_]+\)`)
)

// writeExample renders a catalogue example: YAML and commands as code
// blocks, prose as text.
func writeExample(b *bytes.Buffer, ex string) {
	switch {
	case yamlLike.MatchString(ex):
		b.WriteString("\n\n")
		fence(b, "yaml", ex)
	case shellLike.MatchString(ex):
		b.WriteString("\n\n")
		fence(b, "sh", ex)
	default:
		fmt.Fprintf(b, " %s\n\n", upperFirst(ex)+".")
	}
}

// Special sections of a fixture (see compile/golden_test.go); every other
// section is a file.
const (
	secWant     = "want.diags"
	secEnv      = "env"
	secArgs     = "args"
	secUsecases = "usecases"
)

func writeFixture(b *bytes.Buffer, root string, code diag.Code) error {
	rel := filepath.ToSlash(filepath.Join(FixtureDir, string(code)+".txtar"))
	ar, err := txtar.ParseFile(filepath.Join(root, rel))
	if err != nil {
		return fmt.Errorf("%s: compile-time code without a fixture: %w", code, err)
	}
	comment := strings.TrimSpace(string(ar.Comment))
	comment = strings.TrimSpace(strings.TrimPrefix(comment, "#"))
	comment = expectsMarker.ReplaceAllString(comment, "")
	fmt.Fprintf(b, "**Failing example** ([`%s`](../%s)). %s\n\n", filepath.Base(rel), rel, comment)
	var want string
	for _, f := range ar.Files {
		switch f.Name {
		case secWant:
			want = string(f.Data)
		case secEnv:
			b.WriteString("With these environment variables:\n\n")
			fence(b, "sh", string(f.Data))
		case secArgs:
			for _, a := range strings.Fields(string(f.Data)) {
				if env, ok := strings.CutPrefix(a, "env="); ok {
					fmt.Fprintf(b, "Run with `--env %s`.\n\n", env)
				} else {
					fmt.Fprintf(b, "Run with `%s`.\n\n", a)
				}
			}
		case secUsecases:
			b.WriteString("The application registers these use cases:\n\n")
			fence(b, "text", string(f.Data))
		default:
			lang := "text"
			if ext := filepath.Ext(f.Name); ext == ".yaml" || ext == ".yml" {
				lang = "yaml"
			}
			fmt.Fprintf(b, "`%s`:\n\n", f.Name)
			fence(b, lang, string(f.Data))
		}
	}
	if strings.TrimSpace(want) == "" {
		return fmt.Errorf("%s: %s has no %s section", code, rel, secWant)
	}
	b.WriteString("Expected diagnostics (code, file:line, config path):\n\n")
	fence(b, "text", want)
	return nil
}

// fence writes body as a fenced code block, with a fence longer than any run
// of backticks in it.
func fence(b *bytes.Buffer, lang, body string) {
	ticks := "```"
	for strings.Contains(body, ticks) {
		ticks += "`"
	}
	fmt.Fprintf(b, "%s%s\n%s\n%s\n\n", ticks, lang, strings.TrimRight(body, "\n"), ticks)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// md turns a Go raw string into Markdown: ^ stands for a backtick, which a
// raw string cannot hold.
func md(s string) string { return strings.ReplaceAll(s, "^", "`") }

const introText = `Every problem heddle reports carries a **code**: a stable identifier such as
^MCP_AUTH_CONFLICT^. Codes are never renamed or reused, so scripts, alerts and
tests can match on them. The message next to a code may be reworded between
releases: match the code and the config path, never the wording. Messages never
contain a secret value: a diagnostic about something that might be a credential
names the setting, not the value.

This file is generated by ^go run ./internal/gendocs^ from the catalogue of
the built-in kinds: the core's codes in ^diag/catalog.go^, and each kind's own
in its package's ^codes.go^ (^grants/mcpkind/codes.go^, …). Within a phase the
core's codes come first, then each kind's. A test fails when this file is stale
or when a code is missing from the catalogue. The configuration keys named here
are described in [configuration.md](configuration.md).

## Severities

- **error**: the configuration cannot be used. ^heddle check^ and ^heddle plan^
  exit 1 and no plan is produced: heddle never produces a partial plan.
- **warning**: reported, but the plan is produced and the exit status is 0.

## Phases

- **Compile time**: found while loading and compiling configuration
  (^heddle check^, ^heddle plan^). This needs no network and no secret values,
  so it runs anywhere, in CI for instance. Every problem is reported in one run,
  sorted by file and line.
- **Start-up**: found when the runtime opens a plan: secret references are
  resolved, auth strategies built, servers connected and tool filters checked,
  all within one deadline (^ai.startup_timeout_ms^).
- **Call time**: found during one tool call: the tool is unknown, a policy
  denies it, a deadline passes, a server is down.

## Reading ^heddle check^

With this deployment and artifact:

`

const textOutputText = `^heddle check^ writes each diagnostic to standard error as
^file:line:column: [warning: ]CODE config.path: message^, with the remedy, when
there is one, indented on the next line, and then the number of errors:

`

const afterTextOutput = `The location is that of the layer that last set the path: the base file, the
^--env^ overlay, or, for a value that came from a ^HEDDLE_^ environment variable,
the variable's name (^$HEDDLE_AI__STARTUP_TIMEOUT_MS^) with no line. A problem
about a key that is missing points at the block that should hold it. When there
is no error, ^heddle check^ prints any warnings the same way and then a summary
to standard output (^ok: 2 agents, 2 MCP servers, 0 warnings^). Exit status: 0
when there is no error (warnings allowed), 1 when there is one, 2 for a usage
error.

With ^--format json^, ^heddle check^ writes one JSON object to standard output
instead; for the same example:

`

const afterJSON = `^ok^ is true when there is no error. ^severity^ is ^error^ or ^warning^;
^message^ is the summary followed by the remedy in parentheses; ^file^ is empty
and ^line^ and ^column^ (1-based) are 0 when unknown. When compilation fails,
^heddle plan^ reports the diagnostics in the same way (as text on standard error,
or as this JSON object on standard output) and exits 1.

The sections below give, for each code, when it is reported and how severe it
is, what it means, a failing example and the fix. The example of a
compile-time code is its golden fixture, compiled by the tests on every run,
with the diagnostics it must give written one per line as
^CODE file:line config.path^. The examples of start-up and call-time codes
illustrate the situation in a line.

`

// introExample is compiled when the documentation is generated, so that the
// sample output in the introduction is what heddle really prints.
var introExample = fstest.MapFS{
	"config/api.yaml": {Data: []byte(`ai:
  mcp_servers:
    runbooks:
      url: https://runbooks.example.com/mcp
      timeout_ms: 25000
    catalog:
      url: https://catalog.example.com/mcp
      headers_ref: X-API-Key=abc123
`)},
	"agents/incident-triage/agent.yaml": {Data: []byte(`capabilities:
  - {kind: mcp, server: runbooks}
  - {kind: mcp, server: catalog}
`)},
}

func writeIntro(b *bytes.Buffer) error {
	text, js, err := exampleOutput()
	if err != nil {
		return err
	}
	b.WriteString(md(introText))
	for _, name := range []string{"config/api.yaml", "agents/incident-triage/agent.yaml"} {
		fmt.Fprintf(b, "`%s`:\n\n", name)
		fence(b, "yaml", string(introExample[name].Data))
	}
	b.WriteString(md(textOutputText))
	fence(b, "text", text)
	b.WriteString(md(afterTextOutput))
	fence(b, "json", js)
	b.WriteString(md(afterJSON))
	return nil
}

// exampleOutput compiles introExample and formats its diagnostics as
// heddle check does, as text and as JSON.
func exampleOutput() (text, js string, err error) {
	cfg, ds := config.Load(config.Options{FS: introExample})
	_, cds := compile.Compile(compile.Input{Config: cfg})
	ds = append(ds, cds...)
	ds.Sort()
	if !ds.HasErrors() {
		return "", "", fmt.Errorf("the introduction's example compiles without errors")
	}
	text, js = heddlecmd.CheckOutput(ds)
	return text, js, nil
}
