package config

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/heddlehq/heddle/diag"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/v2"
	"go.yaml.in/yaml/v3"
)

// EnvPrefix is the prefix of environment variables that overlay the
// deployment: HEDDLE_AI__STARTUP_TIMEOUT_MS=5000 sets ai.startup_timeout_ms.
// A double underscore separates path segments; names are lower-cased; the
// value is read as a YAML scalar or flow collection ("5000", "true", "[a, b]").
// A variable whose first segment is not a section of the deployment
// (HEDDLE_TOKEN) is not configuration and is ignored; one that would create
// a map entry the files do not have (a server, an auth plugin, a token) is
// refused, CONFIG_KEY_UNKNOWN.
const EnvPrefix = "HEDDLE_"

// Options say where configuration is read from.
type Options struct {
	// FS is the file system paths are read from; nil means the OS file
	// system, with paths relative to the working directory.
	FS fs.FS
	// ConfigFile is the base deployment file. Default "config/api.yaml".
	ConfigFile string
	// Env names an overlay, config/api.<Env>.yaml beside ConfigFile.
	Env string
	// AgentsDir holds one directory per agent with an agent.yaml. Default "agents".
	AgentsDir string
	// Environ is the process environment for HEDDLE_ overlays; nil means none.
	// Only variables that name a section of the deployment (HEDDLE_AI__…,
	// HEDDLE_SERVE__…, HEDDLE_MCP__…) are read; other HEDDLE_ variables are
	// ignored.
	Environ []string
	// Logger, when set, is told at debug level of each HEDDLE_ variable
	// ignored; nil means silently.
	Logger *slog.Logger
}

// Config is everything heddle reads: one deployment and every artifact.
type Config struct {
	Deployment *Deployment
	Artifacts  []*Artifact
}

// Load reads the deployment and every artifact. It gathers every problem it
// can find rather than stopping at the first; diagnostics are located. The
// returned Config is non-nil even when there are errors, with whatever could
// be decoded, so that compilation can report more problems in the same run.
func Load(opts Options) (*Config, diag.Diagnostics) {
	dep, ds := LoadDeployment(opts)
	arts, ads := LoadArtifacts(opts)
	return &Config{Deployment: dep, Artifacts: arts}, append(ds, ads...)
}

func (o Options) configFile() string {
	if o.ConfigFile == "" {
		return "config/api.yaml"
	}
	return o.ConfigFile
}

func (o Options) agentsDir() string {
	if o.AgentsDir == "" {
		return "agents"
	}
	return o.AgentsDir
}

func (o Options) readFile(name string) ([]byte, error) {
	if o.FS == nil {
		return os.ReadFile(name)
	}
	return fs.ReadFile(o.FS, path.Clean(filepath.ToSlash(name)))
}

// exists reports whether the file name is there.
func (o Options) exists(name string) bool {
	if o.FS == nil {
		_, err := os.Stat(name)
		return err == nil
	}
	_, err := fs.Stat(o.FS, path.Clean(filepath.ToSlash(name)))
	return err == nil
}

func (o Options) readDir(name string) ([]fs.DirEntry, error) {
	if o.FS == nil {
		return os.ReadDir(name)
	}
	return fs.ReadDir(o.FS, path.Clean(filepath.ToSlash(name)))
}

// OverlayFile returns the overlay file name for env: api.yaml → api.<env>.yaml.
func OverlayFile(configFile, env string) string {
	ext := filepath.Ext(configFile)
	return strings.TrimSuffix(configFile, ext) + "." + env + ext
}

var envNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// noOverlay is the diagnostic of an --env whose overlay file does not
// exist: it names the file and the environment, and lists the overlays
// that do exist beside the base file.
func (o Options) noOverlay(file string) diag.Diagnostic {
	base := o.configFile()
	ext := filepath.Ext(base)
	prefix := strings.TrimSuffix(filepath.Base(base), ext) + "."
	var have []string
	entries, _ := o.readDir(filepath.Dir(base))
	for _, e := range entries {
		env, ok := strings.CutPrefix(e.Name(), prefix)
		if env, ok2 := strings.CutSuffix(env, ext); ok && ok2 && !e.IsDir() && envNameRE.MatchString(env) {
			have = append(have, e.Name())
		}
	}
	d := diag.Errorf(diag.ConfigParse, "", "no overlay %s exists for environment %s", filepath.Base(file), o.Env).At(&diag.Range{File: file})
	if len(have) == 0 {
		return d.WithDetail("there are no overlays beside %s: leave out --env, or create %s", filepath.Base(base), filepath.Base(file))
	}
	return d.WithDetail("the overlays beside %s are %s: correct --env, or create %s", filepath.Base(base), strings.Join(have, ", "), filepath.Base(file))
}

// LoadDeployment reads api.yaml, its --env overlay and HEDDLE_ variables,
// merges them (maps merge key by key, lists and scalars are replaced, null
// removes a key) and decodes the result strictly.
func LoadDeployment(opts Options) (*Deployment, diag.Diagnostics) {
	var ds diag.Diagnostics
	dep := &Deployment{Index: &Index{}, Env: opts.Env}
	k := koanf.New(".")

	files := []string{opts.configFile()}
	if opts.Env != "" {
		if !envNameRE.MatchString(opts.Env) {
			ds = append(ds, diag.Errorf(diag.ConfigParse, "", "environment name must be letters, digits, '-' and '_'").
				At(&diag.Range{File: opts.configFile()}))
			dep.Incomplete = true
			dep.applyDefaults()
			return dep, ds
		}
		files = append(files, OverlayFile(opts.configFile(), opts.Env))
	}
	for i, f := range files {
		data, err := opts.readFile(f)
		if err != nil && i > 0 && errors.Is(err, fs.ErrNotExist) {
			ds = append(ds, opts.noOverlay(f))
			continue
		}
		if err != nil {
			d := diag.Errorf(diag.ConfigParse, "", "cannot read deployment file: %s", fsReason(err)).At(&diag.Range{File: f})
			ds = append(ds, d)
			continue
		}
		m, li, pds := parseLayer(f, data)
		ds = append(ds, pds...)
		if m == nil {
			continue
		}
		dep.Index.add(li)
		dep.Sources = append(dep.Sources, f)
		if err := k.Load(confmap.Provider(m, ""), nil); err != nil {
			ds = append(ds, diag.Errorf(diag.ConfigParse, "", "cannot merge layer").At(&diag.Range{File: f}))
		}
	}

	// Variables are checked against the files only when every file could
	// be read: against a partial tree, every entry would look new.
	var written map[string]any
	if !ds.HasErrors() {
		written = pruneNil(k.Raw())
	}
	m, layers, eds, refused := envOverlay(opts.Environ, written, opts.Logger)
	ds = append(ds, eds...)
	if len(m) > 0 {
		for _, l := range layers {
			dep.Index.add(l)
		}
		dep.Sources = append(dep.Sources, "env")
		if err := k.Load(confmap.Provider(m, ""), nil); err != nil {
			ds = append(ds, diag.Errorf(diag.ConfigParse, "", "cannot merge environment overlay"))
		}
	}
	// A refused variable was left out: what remains is whole, and still
	// decodes, so that one run reports every problem.
	incomplete := ds.HasErrors()
	ds = append(ds, refused...)
	if incomplete {
		dep.Incomplete = true
		dep.applyDefaults()
		return dep, ds
	}

	raw := pruneNil(k.Raw())
	dep.raw = raw
	dds := decodeStrict(raw, dep, "")
	dep.Index.Locate(dds)
	ds = append(ds, dds...)
	for _, d := range dep.checkValues() {
		if !slices.ContainsFunc(dds, func(e diag.Diagnostic) bool { return e.Path == d.Path }) {
			ds = append(ds, d)
		}
	}
	dep.Index.Locate(ds)
	dep.applyDefaults()
	return dep, ds
}

// LoadArtifacts reads every <dir>/<name>/agent.yaml. The agent's name is its
// directory's name; a name: key, when present, must agree.
func LoadArtifacts(opts Options) ([]*Artifact, diag.Diagnostics) {
	dir := opts.agentsDir()
	entries, err := opts.readDir(dir)
	if err != nil {
		return nil, diag.Diagnostics{diag.Errorf(diag.ConfigParse, "", "cannot read agents directory: %s", fsReason(err)).
			At(&diag.Range{File: dir})}
	}
	var arts []*Artifact
	var ds diag.Diagnostics
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		file := filepath.Join(dir, e.Name(), "agent.yaml")
		data, err := opts.readFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			// agent.yml is a spelling heddle does not read: said, rather
			// than an agent that silently does not exist.
			if yml := filepath.Join(dir, e.Name(), "agent.yml"); opts.exists(yml) {
				ds = append(ds, diag.Errorf(diag.ConfigParse, "", "agent %s's file is named agent.yml; heddle reads agent.yaml", e.Name()).
					WithDetail("rename it: mv %s %s", yml, file).At(&diag.Range{File: yml}))
			}
			continue
		}
		if err != nil {
			ds = append(ds, diag.Errorf(diag.ConfigParse, "", "cannot read artifact: %s", fsReason(err)).At(&diag.Range{File: file}))
			continue
		}
		art, ads := ParseArtifact(file, e.Name(), data)
		ds = append(ds, ads...)
		if art != nil {
			arts = append(arts, art)
		}
	}
	return arts, ds
}

// ParseArtifact decodes one agent.yaml for the agent called name.
func ParseArtifact(file, name string, data []byte) (*Artifact, diag.Diagnostics) {
	m, li, ds := parseLayer(file, data)
	if m == nil {
		return nil, ds
	}
	m = pruneNil(m)
	art := &Artifact{File: file, Index: &Index{}, raw: m}
	art.Index.add(li)
	dds := decodeStrict(m, art, "")
	if art.Name != "" && art.Name != name {
		dds = append(dds, diag.Errorf(diag.AgentNameMismatch, "name",
			"artifact is named %q but lives in the directory of agent %q", art.Name, name).
			WithDetail("rename the directory or the name: key so that they agree"))
	}
	art.Name = name
	for _, d := range art.applyDefaults() {
		if !slices.ContainsFunc(dds, func(e diag.Diagnostic) bool { return e.Path == d.Path }) {
			dds = append(dds, d)
		}
	}
	for i, c := range art.Capabilities {
		if c.Settings == nil {
			art.Capabilities[i].Settings = map[string]any{}
		}
	}
	art.Index.Locate(dds)
	return art, append(ds, dds...)
}

// ParseYAML parses one configuration document as heddle does (secret
// references may stand unquoted in flow collections) into a map; syntax
// errors are CONFIG_PARSE diagnostics.
func ParseYAML(file string, data []byte) (map[string]any, diag.Diagnostics) {
	m, _, ds := parseLayer(file, data)
	return m, ds
}

// parseLayer parses one YAML document into a map and its position index.
// An empty document is an empty map. The document is checked against the
// limits of bounds.go before anything is built from it.
func parseLayer(file string, data []byte) (map[string]any, layerIndex, diag.Diagnostics) {
	if len(data) > MaxDocumentBytes {
		return nil, layerIndex{}, diag.Diagnostics{sizeLimit(file)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(quoteFlowRefs(data), &root); err != nil {
		return nil, layerIndex{}, diag.Diagnostics{yamlDiag(file, err)}
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return map[string]any{}, newLayer(file, &root), nil
	}
	top := root.Content[0]
	if top.Kind == yaml.ScalarNode && top.Tag == "!!null" {
		return map[string]any{}, newLayer(file, &root), nil
	}
	if top.Kind != yaml.MappingNode {
		return nil, layerIndex{}, diag.Diagnostics{diag.Errorf(diag.ConfigParse, "", "the document must be a mapping of keys to values").
			At(&diag.Range{File: file, Line: top.Line, Column: top.Column})}
	}
	v, ds := decodeNode(file, top)
	if ds != nil {
		return nil, layerIndex{}, ds
	}
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	// Only a checked tree is indexed: the index follows aliases.
	return m, newLayer(file, &root), nil
}

var (
	yamlPosRE   = regexp.MustCompile(`(?:at )?line (\d+)(?:,? column (\d+))?`)
	yamlQuoteRE = regexp.MustCompile("`[^`]*`|\"[^\"]*\"|'[^']*'")
)

// yamlDiag turns a YAML error into CONFIG_PARSE at the line (and column,
// when yaml.v3 gives one) it names.
func yamlDiag(file string, err error) diag.Diagnostic {
	r := &diag.Range{File: file}
	if m := yamlPosRE.FindStringSubmatch(err.Error()); m != nil {
		r.Line, _ = strconv.Atoi(m[1])
		r.Column, _ = strconv.Atoi(m[2])
	}
	return diag.Errorf(diag.ConfigParse, "", "invalid YAML: %s", yamlMessage(err)).At(r)
}

// yamlMessage is the text of a YAML error without its positions, which a
// diagnostic carries in its range, and without any quoted text, which
// could be a value.
func yamlMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:")
	msg = yamlPosRE.ReplaceAllString(msg, "")
	msg = yamlQuoteRE.ReplaceAllString(msg, "…")
	var parts []string
	for _, p := range strings.Split(msg, "\n") {
		if p = strings.Trim(p, " :;"); p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "; ")
}

// pruneNil removes every map entry whose value is null, so that null in an
// overlay removes what a lower layer set.
func pruneNil(m map[string]any) map[string]any {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			pruneNil(t)
		case []any:
			for _, e := range t {
				if em, ok := e.(map[string]any); ok {
					pruneNil(em)
				}
			}
		}
	}
	return m
}

// written reports whether raw holds a value at path.
func written(raw map[string]any, path string) bool {
	var cur any = raw
	for _, seg := range SplitPath(path) {
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[seg]
			if !ok {
				return false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(t) {
				return false
			}
			cur = t[i]
		default:
			return false
		}
	}
	return cur != nil
}

func fsReason(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return "read failed"
}

// DecodeStrict decodes a map into out (a pointer to a struct with koanf
// tags): an unknown key is CONFIG_KEY_UNKNOWN and a value of the wrong type
// CONFIG_VALUE_INVALID, each at its path below base. Messages name the
// setting and the expected type, never the value. Grant kinds and auth
// strategies use it to decode their own settings.
func DecodeStrict(in map[string]any, out any, base string) diag.Diagnostics {
	return decodeStrict(in, out, base)
}

func decodeStrict(in map[string]any, out any, base string) diag.Diagnostics {
	if in == nil {
		return nil // nothing written: nothing to decode, nothing unknown
	}
	var md mapstructure.Metadata
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		TagName:    "koanf",
		Metadata:   &md,
		DecodeHook: mapstructure.TextUnmarshallerHookFunc(),
		Result:     out,
	})
	if err != nil {
		panic(err) // programming error: out is not a pointer
	}
	var ds diag.Diagnostics
	if err := dec.Decode(in); err != nil {
		root := reflect.TypeOf(out)
		for _, e := range flattenErrors(err) {
			var de *mapstructure.DecodeError
			name := ""
			if errors.As(e, &de) {
				name = de.Name()
			}
			segs := fieldPath(root, in, name)
			p := PathString(append(SplitPath(base), segs...))
			ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, p, "wrong type of value: want %s", describe(root, segs)))
		}
	}
	slices.Sort(md.Unused)
	for _, u := range md.Unused {
		segs := fieldPath(reflect.TypeOf(out), in, u)
		if len(segs) == 0 {
			segs = []string{""}
		}
		p := PathString(append(SplitPath(base), segs...))
		d := diag.Errorf(diag.ConfigKeyUnknown, p, "unknown key %q", segs[len(segs)-1])
		if known := knownKeys(reflect.TypeOf(out), segs[:len(segs)-1]); len(known) > 0 {
			d = d.WithDetail("known keys here: %s", strings.Join(known, ", "))
		}
		ds = append(ds, d)
	}
	return ds
}

func flattenErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flattenErrors(e)...)
		}
		return out
	}
	return []error{err}
}

// typeAt walks a Go type along a config path.
func typeAt(t reflect.Type, segs []string) reflect.Type {
	for _, s := range segs {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldByTag(t, s)
			if !ok {
				return nil
			}
			t = f.Type
		case reflect.Map, reflect.Slice, reflect.Array:
			t = t.Elem()
		default:
			return nil
		}
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("koanf"), ","); name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func knownKeys(t reflect.Type, segs []string) []string {
	t = typeAt(t, segs)
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("koanf"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

var refType = reflect.TypeFor[Ref]()
var envValueType = reflect.TypeFor[EnvValue]()

// describe names the type a config path expects, for messages.
func describe(root reflect.Type, segs []string) string {
	t := typeAt(root, segs)
	if t == nil {
		return "a value of another type"
	}
	switch {
	case t == refType:
		return "a secret reference such as ${secrets:/path}"
	case t == envValueType:
		return "a string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return "a value of another type"
}
