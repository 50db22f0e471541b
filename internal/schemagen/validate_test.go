package schemagen_test

import (
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"
	"golang.org/x/tools/txtar"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/schemagen"
)

// These tests validate heddle's own configuration files with the committed
// schemas and a real validator, and hold the schemas to what the loader and
// the compiler say of the same files: a file in which they find no error
// passes, and a file with a key they do not know fails.

// schemas are the committed schemas, resolved.
type schemas struct{ api, agent *jsonschema.Resolved }

func loadSchemas(t *testing.T) schemas {
	t.Helper()
	return schemas{api: resolve(t, schemagen.APIFile), agent: resolve(t, schemagen.AgentFile)}
}

func resolve(t *testing.T, file string) *jsonschema.Resolved {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return rs
}

// isAgent reports whether name is an artifact; every other YAML file is a
// deployment layer.
func isAgent(name string) bool { return path.Base(name) == "agent.yaml" }

func isYAML(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

// validate checks one document, already parsed, against the schema of its
// kind of file.
func (s schemas) validate(name string, doc map[string]any) error {
	rs := s.api
	if isAgent(name) {
		rs = s.agent
	}
	// The validator takes JSON values: a round trip turns YAML's ints and
	// nested maps into them.
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return rs.Validate(v)
}

// validateFile parses a file as heddle does and validates it.
func (s schemas) validateFile(name string, data []byte) error {
	doc, ds := config.ParseYAML(name, data)
	if ds.HasErrors() {
		return ds.Err()
	}
	return s.validate(name, doc)
}

// shippedFiles are the configuration files the repository ships: the
// example deployment and its overlays, the agents, the examples' agents and
// deployments, and the command's example.
func shippedFiles(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "config", "api*.yaml"))
	agents, _ := filepath.Glob(filepath.Join(root, "agents", "*", "agent.yaml"))
	files = append(files, agents...)
	for _, dir := range []string{"examples", "heddlecmd/testdata/example"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() && (e.Name() == "node_modules" || e.Name() == "script") {
				return filepath.SkipDir
			}
			if !e.IsDir() && isYAML(p) && (isAgent(p) || strings.Contains(filepath.ToSlash(p), "/config/")) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// TestShippedFilesValid fails when a configuration file the repository
// ships does not pass its schema.
func TestShippedFilesValid(t *testing.T) {
	s := loadSchemas(t)
	files := shippedFiles(t)
	if len(files) < 4 {
		t.Fatalf("found only %d shipped files: %v", len(files), files)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.validateFile(file, data); err != nil {
			t.Errorf("%s does not pass its schema: %v", file, err)
		}
	}
	t.Logf("%d shipped files valid", len(files))
}

// TestShippedFilesNameTheirSchema fails when a shipped file does not start
// with the modeline that points an editor (yaml-language-server) at its
// schema, or the path it gives does not lead to the schema.
func TestShippedFilesNameTheirSchema(t *testing.T) {
	const prefix = "# yaml-language-server: $schema="
	for _, file := range shippedFiles(t) {
		if strings.Contains(filepath.ToSlash(file), "/testdata/") {
			continue // test data, not an example to copy
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		want := schemagen.APIFile
		if isAgent(file) {
			want = schemagen.AgentFile
		}
		rel, ok := strings.CutPrefix(first, prefix)
		if !ok {
			t.Errorf("%s: the first line is not %s<path of %s>", file, prefix, want)
			continue
		}
		target, err := filepath.Rel(root, filepath.Join(filepath.Dir(file), filepath.FromSlash(rel)))
		if err != nil || filepath.ToSlash(target) != want {
			t.Errorf("%s: the modeline points at %s, not at %s", file, rel, want)
		}
	}
}

// tree is one configuration a fixture holds: a deployment file, an
// overlay, HEDDLE_ variables, an agents directory.
type tree struct {
	opts     config.Options
	usecases []string
}

// layers are the files and variables a tree reads, by the name
// diagnostics locate them with.
func (tr tree) layers(fsys fstest.MapFS) []string {
	out := []string{tr.opts.ConfigFile}
	if tr.opts.Env != "" {
		out = append(out, config.OverlayFile(tr.opts.ConfigFile, tr.opts.Env))
	}
	for _, kv := range tr.opts.Environ {
		name, _, _ := strings.Cut(kv, "=")
		out = append(out, "$"+name)
	}
	for name := range fsys {
		if isAgent(name) && path.Dir(path.Dir(name)) == tr.opts.AgentsDir {
			out = append(out, name)
		}
	}
	return out
}

// errorsByFile compiles the tree and returns its errors by the file (or
// variable) they are located in; ignore drops codes that say nothing of the
// files' form.
func (tr tree) errorsByFile(ignore ...diag.Code) map[string][]diag.Diagnostic {
	cfg, ds := config.Load(tr.opts)
	_, cds := compile.Compile(compile.Input{Config: cfg, Usecases: tr.usecases})
	out := map[string][]diag.Diagnostic{}
	for _, d := range append(ds, cds...) {
		if d.Severity != diag.SeverityError || d.Range == nil || slices.Contains(ignore, d.Code) {
			continue
		}
		out[d.Range.File] = append(out[d.Range.File], d)
	}
	return out
}

// envDocument is the deployment layer one HEDDLE_ variable makes, as
// config reads it: the path from its name, the value read as YAML.
func envDocument(kv string) map[string]any {
	name, val, _ := strings.Cut(kv, "=")
	segs := strings.Split(strings.ToLower(strings.TrimPrefix(name, config.EnvPrefix)), "__")
	var v any = val
	var parsed any
	if err := yaml.Unmarshal([]byte(val), &parsed); err == nil && parsed != nil {
		v = parsed
	}
	for i := len(segs) - 1; i >= 0; i-- {
		v = map[string]any{segs[i]: v}
	}
	return v.(map[string]any)
}

// document returns the parsed file or variable called name of a fixture.
func document(t *testing.T, fsys fstest.MapFS, environ []string, name string) map[string]any {
	t.Helper()
	if env, ok := strings.CutPrefix(name, "$"); ok {
		for _, kv := range environ {
			if strings.HasPrefix(kv, env+"=") {
				return envDocument(kv)
			}
		}
		t.Fatalf("no variable %s", env)
	}
	f, ok := fsys[name]
	if !ok {
		t.Fatalf("no file %s", name)
	}
	doc, ds := config.ParseYAML(name, f.Data)
	if ds.HasErrors() {
		t.Fatalf("%s: %v", name, ds.Err())
	}
	return doc
}

// goldenFixture reads compile/testdata/<case>.txtar as compile's golden
// test does: files, HEDDLE_ variables, the --env overlay and registered use
// cases, and want.diags.
func goldenFixture(t *testing.T, file string) (fstest.MapFS, tree, string) {
	t.Helper()
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{}
	tr := tree{opts: config.Options{FS: fsys, ConfigFile: "config/api.yaml", AgentsDir: "agents"}}
	want := ""
	for _, f := range ar.Files {
		switch f.Name {
		case "want.diags":
			want = string(f.Data)
		case "env":
			tr.opts.Environ = strings.Fields(string(f.Data))
		case "args":
			for _, arg := range strings.Fields(string(f.Data)) {
				if env, ok := strings.CutPrefix(arg, "env="); ok {
					tr.opts.Env = env
				}
			}
		case "usecases":
			tr.usecases = strings.Fields(string(f.Data))
		default:
			fsys[f.Name] = &fstest.MapFile{Data: f.Data}
		}
	}
	return fsys, tr, want
}

func goldenFiles(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "compile", "testdata", "*.txtar"))
	codes, _ := filepath.Glob(filepath.Join(root, "compile", "testdata", "codes", "*.txtar"))
	if len(files) == 0 || len(codes) == 0 {
		t.Fatal("found no golden fixtures")
	}
	return append(files, codes...)
}

// unknownKeys returns the CONFIG_KEY_UNKNOWN lines of want.diags (CODE
// file:line path), by file, with their paths.
func unknownKeys(want string) map[string][]string {
	out := map[string][]string{}
	for _, line := range strings.Split(want, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != string(diag.ConfigKeyUnknown) {
			continue
		}
		file, _, _ := strings.Cut(f[1], ":")
		out[file] = append(out[file], f[2])
	}
	return out
}

// TestGoldenFixtures validates every layer of every golden compile fixture:
// a file or HEDDLE_ variable in which the loader and the compiler locate no
// error passes (so every file of a fixture whose want.diags is empty does,
// overlays included), and one that want.diags says has an unknown key
// (CONFIG_KEY_UNKNOWN) fails; when unknown keys are all that is wrong with
// it, it passes once they are removed, so it is the keys the schema refuses.
func TestGoldenFixtures(t *testing.T) {
	s := loadSchemas(t)
	valid, rejected := 0, 0
	for _, file := range goldenFiles(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		fsys, tr, want := goldenFixture(t, file)
		if strings.Contains(want, string(diag.ConfigParse)) || strings.Contains(want, string(diag.ConfigLimit)) {
			continue // not a document the loader reads
		}
		errs := tr.errorsByFile()
		unknown := unknownKeys(want)
		for _, layer := range tr.layers(fsys) {
			doc := document(t, fsys, tr.opts.Environ, layer)
			err := s.validate(layer, doc)
			if paths, ok := unknown[layer]; ok {
				rejected++
				if err == nil {
					t.Errorf("%s: %s: the schema accepts unknown keys the loader refuses: %s", name, layer, strings.Join(paths, ", "))
				}
				if onlyUnknownKeys(errs[layer]) {
					for _, p := range paths {
						deletePath(doc, config.SplitPath(p))
					}
					if err := s.validate(layer, doc); err != nil {
						t.Errorf("%s: %s: without its unknown keys the schema still refuses it: %v", name, layer, err)
					}
				}
				continue
			}
			if len(errs[layer]) == 0 {
				valid++
				if err != nil {
					t.Errorf("%s: %s: the loader finds no error in it, but the schema refuses it: %v", name, layer, err)
				}
			}
		}
	}
	if valid < 20 || rejected < 3 {
		t.Errorf("validated %d layers and rejected %d: have the fixtures moved?", valid, rejected)
	}
	t.Logf("golden fixtures: %d layers valid, %d with unknown keys rejected", valid, rejected)
}

// TestSchemaRefusesWhatItExpresses fails when the schema accepts a file of
// the golden fixture of a code it can tell (a value of the wrong type, a
// capability of no kind or an unknown one, a literal where a secret
// reference belongs, an env value or name that cannot be one) in which the
// loader reports that code.
func TestSchemaRefusesWhatItExpresses(t *testing.T) {
	s := loadSchemas(t)
	for _, code := range []diag.Code{diag.ConfigKeyUnknown, diag.ConfigValueInvalid, diag.CapabilityKindUnknown, diag.MCPCredentialsInline, diag.MCPEnvInvalid} {
		fsys, tr, _ := goldenFixture(t, filepath.Join(root, "compile", "testdata", "codes", string(code)+".txtar"))
		found := false
		for layer, ds := range tr.errorsByFile() {
			if !slices.ContainsFunc(ds, func(d diag.Diagnostic) bool { return d.Code == code }) {
				continue
			}
			found = true
			if err := s.validate(layer, document(t, fsys, tr.opts.Environ, layer)); err == nil {
				t.Errorf("%s: the loader reports %s in %s, which the schema accepts", code, code, layer)
			}
		}
		if !found {
			t.Errorf("the fixture of %s does not produce it", code)
		}
	}
}

func onlyUnknownKeys(ds []diag.Diagnostic) bool {
	for _, d := range ds {
		if d.Code != diag.ConfigKeyUnknown {
			return false
		}
	}
	return true
}

// deletePath removes the value at segs from doc.
func deletePath(doc map[string]any, segs []string) {
	var cur any = doc
	for i, seg := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				delete(c, seg)
				return
			}
			cur = c[seg]
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(c) {
				return
			}
			cur = c[n]
		}
	}
}

// scriptDirs hold the command's testscript fixtures: heddle's command
// library, the stock command and the example application's worker.
var scriptDirs = []string{
	"heddlecmd/testdata/script",
	"cmd/heddle/testdata/script",
	"examples/incidents/cmd/incidents-worker/testdata/script",
}

// scriptTrees returns every configuration a script's files can make: each
// deployment file with each of its overlays (or none), with each agents
// directory.
func scriptTrees(fsys fstest.MapFS) []tree {
	var bases, agentDirs []string
	for _, name := range slices.Sorted(maps.Keys(fsys)) {
		switch {
		case isAgent(name):
			if dir := path.Dir(path.Dir(name)); !slices.Contains(agentDirs, dir) {
				agentDirs = append(agentDirs, dir)
			}
		case isYAML(name):
			bases = append(bases, name)
		}
	}
	var trees []tree
	for _, base := range bases {
		envs := []string{""}
		for _, other := range bases {
			prefix := strings.TrimSuffix(base, path.Ext(base)) + "."
			if env, ok := strings.CutPrefix(strings.TrimSuffix(other, path.Ext(other)), prefix); ok && !strings.Contains(env, ".") {
				envs = append(envs, env)
			}
		}
		for _, env := range envs {
			for _, dir := range agentDirs {
				trees = append(trees, tree{opts: config.Options{FS: fsys, ConfigFile: base, Env: env, AgentsDir: dir}})
			}
		}
	}
	return trees
}

// TestScriptFixtures validates the configuration files of the command's
// testscripts that compile without errors: every file that takes part in a
// configuration in which the loader and the compiler locate no error in
// it. Use cases are the application's, so USECASE_UNKNOWN does not count.
func TestScriptFixtures(t *testing.T) {
	s := loadSchemas(t)
	checked := 0
	for _, dir := range scriptDirs {
		scripts, _ := filepath.Glob(filepath.Join(root, dir, "*.txtar"))
		if len(scripts) == 0 {
			t.Errorf("no scripts in %s", dir)
		}
		for _, script := range scripts {
			ar, err := txtar.ParseFile(script)
			if err != nil {
				t.Fatal(err)
			}
			fsys := fstest.MapFS{}
			for _, f := range ar.Files {
				if isYAML(f.Name) {
					fsys[f.Name] = &fstest.MapFile{Data: f.Data}
				}
			}
			clean := map[string]bool{}
			for _, tr := range scriptTrees(fsys) {
				errs := tr.errorsByFile(diag.UsecaseUnknown)
				for _, layer := range tr.layers(fsys) {
					if len(errs[layer]) == 0 {
						clean[layer] = true
					}
				}
			}
			for _, name := range slices.Sorted(maps.Keys(clean)) {
				checked++
				if err := s.validateFile(name, fsys[name].Data); err != nil {
					t.Errorf("%s: %s compiles without errors, but the schema refuses it: %v", script, name, err)
				}
			}
		}
	}
	if checked < 10 {
		t.Errorf("validated only %d script files: have the scripts moved?", checked)
	}
	t.Logf("scripts: %d files valid", checked)
}
