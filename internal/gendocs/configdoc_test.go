package main

import (
	"encoding"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/auth"
	"github.com/heddlehq/heddle/builtin"
	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/grants/a2akind"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/grants/sqlkind"
	"github.com/heddlehq/heddle/policy"
)

// These tests keep docs/configuration.md honest: every key of api.yaml and
// agent.yaml, every setting of a built-in auth strategy and of a grant kind,
// every field a policy rule can read, and the defaults heddle applies must
// be in it; and the error codes it names must link to docs/errors.md.

const configDoc = "docs/configuration.md"

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	codeSpanRE    = regexp.MustCompile("`([^`\n]+)`")
	placeholderRE = regexp.MustCompile(`<[^<>]*>`)
	indexRE       = regexp.MustCompile(`\[[^\[\]]*\]`)
)

// normalize turns a documented key into the form keys are compared in:
// <server> becomes <> and [i] becomes [].
func normalize(key string) string {
	return indexRE.ReplaceAllString(placeholderRE.ReplaceAllString(key, "<>"), "[]")
}

// readable spells a normalized key for a message: ai.mcp_servers.<name>.url.
func readable(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "<>", "<name>"), "[]", "[i]")
}

// mentioned returns every text between backticks in doc, normalized.
func mentioned(doc string) map[string]bool {
	out := map[string]bool{}
	for _, m := range codeSpanRE.FindAllStringSubmatch(doc, -1) {
		out[normalize(m[1])] = true
	}
	return out
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// configKeys walks the koanf tags of t and returns every key path:
// ai.mcp_servers.<>.url, capabilities[].kind. Map keys become <>, list items
// []; values decoded from text (secret references, env values) and
// ",remain" settings (decoded by the kinds and strategies) end the walk.
func configKeys(t *testing.T, typ reflect.Type, prefix string, out map[string]bool) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if reflect.PointerTo(typ).Implements(textUnmarshaler) {
		return
	}
	switch typ.Kind() {
	case reflect.Struct:
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("koanf"), ",")
			if _, hasTag := f.Tag.Lookup("koanf"); !hasTag {
				t.Errorf("%s.%s has no koanf tag: give it one, or koanf:\"-\"", typ, f.Name)
				continue
			}
			if name == "" || name == "-" {
				continue
			}
			key := name
			if prefix != "" {
				key = prefix + "." + name
			}
			out[key] = true
			configKeys(t, f.Type, key, out)
		}
	case reflect.Map:
		configKeys(t, typ.Elem(), prefix+".<>", out)
	case reflect.Slice, reflect.Array:
		configKeys(t, typ.Elem(), prefix+"[]", out)
	}
}

// TestConfigKeysDocumented fails when a key of api.yaml or agent.yaml is
// not mentioned, as its full path in backticks, in docs/configuration.md.
func TestConfigKeysDocumented(t *testing.T) {
	doc := mentioned(readDoc(t, configDoc))
	sections := map[string]reflect.Type{}
	for _, k := range builtin.Default().Grants().Kinds() {
		if d, ok := documentedKinds(t)[k.Name()]; ok && k.Section() != "" {
			sections["ai."+k.Section()] = reflect.TypeOf(d.SectionEntry())
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[config.Deployment](), reflect.TypeFor[config.Artifact]()} {
		keys := map[string]bool{}
		configKeys(t, typ, "", keys)
		if typ == reflect.TypeFor[config.Deployment]() {
			for sec, entry := range sections {
				keys[sec] = true
				configKeys(t, entry, sec+".<>", keys)
			}
		}
		if len(keys) == 0 {
			t.Fatalf("found no keys in %s", typ)
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if !doc[k] {
				t.Errorf("%s: key `%s` (from %s) is not documented", configDoc, readable(k), typ)
			}
		}
	}
}

// section returns the part of doc under the heading that contains title,
// down to the next heading of the same or a higher level.
func section(doc, title string) (string, bool) {
	lines := strings.Split(doc, "\n")
	start, level := -1, 0
	for i, l := range lines {
		lv := headingLevel(l)
		if lv == 0 {
			continue
		}
		if start >= 0 && lv <= level {
			return strings.Join(lines[start:i], "\n"), true
		}
		if start < 0 && strings.Contains(l, title) {
			start, level = i, lv
		}
	}
	if start < 0 {
		return "", false
	}
	return strings.Join(lines[start:], "\n"), true
}

func headingLevel(line string) int {
	n := len(line) - len(strings.TrimLeft(line, "#"))
	if n == 0 || n >= len(line) || line[n] != ' ' {
		return 0
	}
	return n
}

// TestAuthSettingsDocumented fails when a setting of a built-in auth
// strategy is not mentioned in the strategy's section ("`kind: bearer`").
func TestAuthSettingsDocumented(t *testing.T) {
	doc := readDoc(t, configDoc)
	kinds := auth.Default().Kinds()
	for _, want := range []string{"bearer", "static", "oauth"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("auth.Default() has no %q strategy", want)
		}
	}
	for _, kind := range kinds {
		s, _ := auth.Default().Lookup(kind)
		sec, ok := section(doc, "`kind: "+kind+"`")
		if !ok {
			t.Errorf("%s: no section headed `kind: %s` for the built-in auth strategy", configDoc, kind)
			continue
		}
		in := mentioned(sec)
		for name, set := range s.Settings {
			if !in[name] {
				t.Errorf("%s: auth strategy %s: setting `%s` is not documented in its section", configDoc, kind, name)
			}
			for _, v := range set.OneOf {
				if !in[v] {
					t.Errorf("%s: auth strategy %s: value `%s` of %s is not documented", configDoc, kind, v, name)
				}
			}
		}
	}
}

// documentedKinds returns the built-in kinds, each with the types it
// decodes; a kind that does not say fails the test.
func documentedKinds(t *testing.T) map[string]grants.Documented {
	t.Helper()
	out := map[string]grants.Documented{}
	for _, k := range builtin.Default().Grants().Kinds() {
		d, ok := k.(grants.Documented)
		if !ok {
			t.Errorf("kind %q does not implement grants.Documented: the documentation cannot know its keys", k.Name())
			continue
		}
		out[k.Name()] = d
	}
	return out
}

// grantSettings returns, for each built-in kind, the koanf keys of its
// grants' settings.
func grantSettings(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for name, d := range documentedKinds(t) {
		keys := map[string]bool{}
		configKeys(t, reflect.TypeOf(d.GrantSettings()), "", keys)
		var top []string
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if !strings.ContainsAny(k, ".[") {
				top = append(top, k)
			}
		}
		out[name] = top
	}
	return out
}

// TestGrantSettingsDocumented fails when a registered grant kind has no
// section ("`kind: mcp`") or a setting of it is not mentioned there.
func TestGrantSettingsDocumented(t *testing.T) {
	doc := readDoc(t, configDoc)
	settings := grantSettings(t)
	for _, kind := range builtin.Default().Grants().Names() {
		keys, ok := settings[kind]
		if !ok {
			continue // reported by documentedKinds
		}
		sec, ok := section(doc, "`kind: "+kind+"`")
		if !ok {
			t.Errorf("%s: no section headed `kind: %s` for the grant kind", configDoc, kind)
			continue
		}
		in := mentioned(sec)
		for _, k := range keys {
			if !in[k] {
				t.Errorf("%s: grant kind %s: setting `%s` is not documented in its section", configDoc, kind, k)
			}
		}
	}
}

// TestPolicyVariablesDocumented fails when a field a CEL rule can read
// (tool.x, caller.x) is not documented.
func TestPolicyVariablesDocumented(t *testing.T) {
	doc := mentioned(readDoc(t, configDoc))
	for _, v := range []struct {
		name string
		typ  reflect.Type
	}{{"tool", reflect.TypeFor[policy.Tool]()}, {"caller", reflect.TypeFor[heddle.Identity]()}} {
		for i := range v.typ.NumField() {
			name := v.typ.Field(i).Tag.Get("cel")
			if name == "" {
				t.Errorf("%s.%s has no cel tag", v.typ, v.typ.Field(i).Name)
				continue
			}
			if !doc[v.name+"."+name] {
				t.Errorf("%s: rule variable `%s.%s` is not documented", configDoc, v.name, name)
			}
		}
	}
	if !doc["args"] {
		t.Errorf("%s: rule variable `args` is not documented", configDoc)
	}
}

// TestValuesDocumented fails when a value a setting accepts is not
// mentioned.
func TestValuesDocumented(t *testing.T) {
	doc := mentioned(readDoc(t, configDoc))
	var values []string
	values = append(values, mcpkind.TransportHTTP, mcpkind.TransportSSE, mcpkind.TransportStdio)
	values = append(values, config.RemoteClientsRequired, config.RemoteClientsOptional)
	values = append(values, config.ApprovalAsk, config.ApprovalAllow, config.ApprovalDeny)
	values = append(values, "auto")
	values = append(values, mcpkind.ProtocolVersions...)
	values = append(values, sqlkind.Drivers...)
	values = append(values, sqlkind.ParamTypes...)
	values = append(values, builtin.Default().Grants().Names()...)
	for _, v := range values {
		if !doc[v] {
			t.Errorf("%s: value `%s` is not documented", configDoc, v)
		}
	}
	raw := readDoc(t, configDoc)
	for _, scheme := range []string{config.SchemeSecrets, config.SchemeEnv, config.SchemeFile} {
		if !strings.Contains(raw, "`${"+scheme+":") {
			t.Errorf("%s: secret references of scheme %s are not documented", configDoc, scheme)
		}
	}
}

// defaultsExample is a configuration that leaves every defaulted setting
// out, so that compiling it shows the defaults heddle really applies.
var defaultsExample = fstest.MapFS{
	"config/api.yaml": {Data: []byte(`ai:
  mcp_servers:
    s: {url: https://s.example.com/mcp}
  a2a_agents:
    a: {url: https://a.example.com}
  sql_sources:
    q:
      driver: sqlite
      path: q.db
      statements:
        st:
          sql: SELECT :p
          params:
            p: {}
`)},
	"agents/x/agent.yaml": {Data: []byte("capabilities: []\n")},
}

// TestDefaultsDocumented compiles a configuration that sets nothing it need
// not, and fails when a default in the plan differs from the one the
// documentation's tables give for that key.
func TestDefaultsDocumented(t *testing.T) {
	cfg, ds := config.Load(config.Options{FS: defaultsExample})
	p, cds := compile.Compile(compile.Input{Config: cfg})
	if ds = append(ds, cds...); ds.HasErrors() {
		t.Fatalf("the defaults example does not compile:\n%v", ds.Err())
	}
	srv, agent, src := mcpkind.PlanServers(p)["s"], a2akind.PlanAgents(p)["a"], sqlkind.PlanSources(p)["q"]
	param := src.Statements["st"].Params[0]
	pol := p.Agents["x"].Policies
	defaults := map[string]any{
		"ai.startup_timeout_ms":                              p.Startup.TimeoutMS,
		"ai.remote_clients":                                  p.Startup.RemoteClients,
		"ai.mcp_servers.<>.transport":                        srv.Transport,
		"ai.mcp_servers.<>.timeout_ms":                       srv.TimeoutMS,
		"ai.mcp_servers.<>.protocol_version":                 srv.ProtocolVersion,
		"ai.mcp_servers.<>.max_result_bytes":                 srv.MaxResultBytes,
		"ai.a2a_agents.<>.timeout_ms":                        agent.TimeoutMS,
		"ai.sql_sources.<>.timeout_ms":                       src.TimeoutMS,
		"ai.sql_sources.<>.max_rows":                         src.MaxRows,
		"ai.sql_sources.<>.max_bytes":                        src.MaxBytes,
		"ai.sql_sources.<>.statements.<>.params.<>.type":     param.Type,
		"ai.sql_sources.<>.statements.<>.params.<>.required": param.Required,
		"policies.tool_timeout_ms":                           pol.ToolTimeoutMS,
		"policies.approval":                                  pol.Approval,
	}
	doc := readDoc(t, configDoc)
	defaultsSection, ok := section(doc, "## Defaults")
	if !ok {
		t.Fatalf("%s has no ## Defaults section", configDoc)
	}
	for _, key := range slices.Sorted(maps.Keys(defaults)) {
		want := "`" + fmt.Sprint(defaults[key]) + "`"
		rows := tableRows(doc, key)
		if len(tableRows(defaultsSection, key)) == 0 {
			t.Errorf("%s: the Defaults table has no row for `%s`", configDoc, readable(key))
		}
		for _, cells := range rows {
			var cell string
			switch len(cells) {
			case 2: // key | default
				cell = cells[1]
			case 4: // key | type | default | meaning
				cell = cells[2]
			default:
				continue
			}
			if !strings.Contains(cell, want) {
				t.Errorf("%s: `%s` defaults to %s, but a table says %q", configDoc, readable(key), want, strings.TrimSpace(cell))
			}
		}
	}
}

// tableRows returns the cells after the first of every table row whose
// first cell is key in backticks (compared normalized).
func tableRows(doc, key string) [][]string {
	var out [][]string
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(l, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		first := strings.TrimSpace(cells[0])
		if strings.HasPrefix(first, "`") && strings.HasSuffix(first, "`") && normalize(strings.Trim(first, "`")) == key {
			out = append(out, cells)
		}
	}
	return out
}

var (
	codeWordRE = regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b`)
)

// fencedRE matches a fenced code block: program output and examples, where
// codes stand as heddle prints them.
var fencedRE = regexp.MustCompile("(?ms)^```.*?^```")
