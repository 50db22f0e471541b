package config_test

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"go.yaml.in/yaml/v3"
)

// FuzzParseYAML feeds arbitrary bytes to every reader of configuration
// documents: ParseYAML, ParseArtifact, LoadDeployment (as the base file, an
// overlay and a HEDDLE_ value). None may panic; every diagnostic carries a
// catalogued code and a range in the file read, and repeats none of the
// document's values; a document ParseYAML accepts decodes as yaml.v3
// decodes it, and reads back the same once written out.
//
// The seeds are testdata/fuzz/FuzzParseYAML (alias bombs and cycles, merge
// keys, repeated keys, NUL, invalid UTF-8, tabs, the shipped agents' shapes)
// and, generated here, the hostile documents of TestHostileYAML that are
// small, nesting thousands of levels deep, and long keys and scalars.
func FuzzParseYAML(f *testing.F) {
	for _, h := range hostileDocs() {
		// Large documents (which TestHostileYAML checks) make every
		// mutation and minimization slow; their shapes are seeded smaller
		// below.
		if len(h.doc) < 4<<10 {
			f.Add([]byte(h.doc))
		}
	}
	for _, s := range []string{
		"a.b: 1\n",
		"ai: {mcp_servers: {\"run.books\": {url: https://x.example.com/mcp}}}\n",
		"ai: {mcp_servers: {\"a]b\": {url: [1]}}}\n",
		"policies: {\"rules.x\": 1}\n",
		"a: " + strings.Repeat("[", 150) + strings.Repeat("]", 150) + "\n",
		"a: " + strings.Repeat("{a: ", 150) + "1" + strings.Repeat("}", 150) + "\n",
		"a:\n" + strings.Repeat("- ", 150) + "x\n",
		// Thousands of levels, each refused at level 100 without walking
		// the rest.
		"a: " + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + "\n",
		"a: " + strings.Repeat("{a: ", 1000) + "1" + strings.Repeat("}", 1000) + "\n",
		"a:\n" + strings.Repeat("- ", 2000) + "x\n",
		blockMappings(config.MaxDepth + 1),
		// Nesting at the limit, the deepest a value can be.
		"a: " + strings.Repeat("[", config.MaxDepth-1) + strings.Repeat("]", config.MaxDepth-1) + "\n",
		"a:\n" + strings.Repeat("- ", config.MaxDepth-1) + "x\n",
		laughs(2, 400),
		laughs(5, 10),
		flowLaughs(6, 8),
		"a: " + strings.Repeat("x", 4<<10) + "\n",
		strings.Repeat("k", 4<<10) + ": 1\n",
		"? " + strings.Repeat("k", 2<<10) + "\n: " + strings.Repeat("v", 2<<10) + "\n",
		"a: &a " + strings.Repeat("x", 2<<10) + "\nb: [" + strings.Repeat("*a, ", 100) + "]\n",
		"a: &a {x: 1}\nb: {<<: [*a, {y: 2}], z: 3}\n",
		"&a a: 1\n*a : 2\n",
		"a: !!binary aGVsbG8=\nb: 2001-12-14\n",
		"auth: {kind: bearer, token_ref: ${secrets:/a/b}}\n",
	} {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob("../agents/*/agent.yaml")
	for _, file := range append(files, "api.yaml") {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ds := config.ParseYAML("f.yaml", data)
		checkDiags(t, ds, "f.yaml")
		if (m == nil) != ds.HasErrors() {
			t.Errorf("map returned %v with errors %v", m != nil, ds.HasErrors())
		}
		values := valueTexts(data)
		checkNoValues(t, ds, values)
		if m != nil {
			checkYAMLv3(t, data, m)
			checkRoundTrip(t, m)
		}

		_, ds = config.ParseArtifact("agents/a/agent.yaml", "a", data)
		checkDiags(t, ds, "")
		checkNoValues(t, ds, values)

		fsys := fstest.MapFS{"config/api.yaml": {Data: data}, "config/api.x.yaml": {Data: data}}
		environ := []string{"HEDDLE_AI__X=" + string(data), "HEDDLE_AI__MCP_SERVERS__A=" + string(data)}
		_, ds = config.LoadDeployment(config.Options{FS: fsys, Env: "x", Environ: environ})
		checkDiags(t, ds, "")
		checkNoValues(t, ds, values)
	})
}

// checkYAMLv3 checks that m, which heddle read from data, is what yaml.v3's
// decoder reads from it, where the two are comparable.
func checkYAMLv3(t *testing.T, data []byte, m map[string]any) {
	t.Helper()
	if strings.Contains(string(data), "${") || !stringKeyed(data) {
		return
	}
	want, err := yamlDecode(data)
	if err != nil {
		return
	}
	if !sameValue(want, m, false) {
		t.Errorf("yaml.v3 reads %.1000v\nheddle reads %.1000v", want, m)
	}
}

// checkRoundTrip checks that m, written out by yaml.v3, reads back as m,
// numbers as equal numbers (yaml.v3 writes the float 1.0 as 1, which reads
// back as an integer). Written out, every alias is expanded, so the copy
// may be refused for its size (CONFIG_LIMIT), never for anything else.
func checkRoundTrip(t *testing.T, m map[string]any) {
	t.Helper()
	if hasMergeKey(m) {
		// "<<" is written unquoted, and would read back as a merge key.
		return
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatalf("yaml.v3 cannot write what heddle read: %v", err)
	}
	back, ds := config.ParseYAML("back.yaml", out)
	if len(ds) == 1 && ds[0].Code == diag.ConfigLimit {
		return
	}
	if ds.HasErrors() {
		t.Fatalf("written out, it does not read back: %v\n%.1000s", ds, out)
	}
	if !sameValue(m, back, true) {
		t.Errorf("read %.1000v\nwritten out and read back %.1000v", m, back)
	}
}

// hasMergeKey reports whether any mapping of v has the key "<<".
func hasMergeKey(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		if _, ok := t["<<"]; ok {
			return true
		}
		for _, e := range t {
			if hasMergeKey(e) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if hasMergeKey(e) {
				return true
			}
		}
	}
	return false
}

// sameValue reports whether a and b, decoded YAML, are equal: NaN equal
// to NaN, times equal when they are the same instant and, when numeric is
// set, numbers equal when their values are, whatever their types. Unlike
// cmp.Equal, it takes time linear in the values: go-cmp compares the
// elements of a list twice, once to align the lists and once to report,
// which is time exponential in the nesting of lists of lists (a fuzzed
// list of lists 90 deep took it hours).
func sameValue(a, b any, numeric bool) bool {
	if numeric {
		if x, ok := number(a); ok {
			y, ok := number(b)
			return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
		}
	}
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, e := range a {
			f, ok := b[k]
			if !ok || !sameValue(e, f, numeric) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], b[i], numeric) {
				return false
			}
		}
		return true
	case float64:
		b, ok := b.(float64)
		return ok && (a == b || math.IsNaN(a) && math.IsNaN(b))
	case time.Time:
		b, ok := b.(time.Time)
		return ok && a.Equal(b)
	}
	return reflect.DeepEqual(a, b)
}

// number is the value of v, if v is one of the numbers yaml.v3 decodes.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case uint64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// minEcho is the length from which a value of the document is looked for
// in diagnostics: shorter ones turn up as words of any message.
const minEcho = 12

// valueTexts returns the scalar values of data, as yaml.v3 reads it, that
// are at least minEcho bytes long and are no part of any key (a key is a
// name, which a diagnostic may repeat). None may appear in a diagnostic: a
// value may be a credential.
func valueTexts(data []byte) []string {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		return nil
	}
	var keys, values []string
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if depth > config.MaxDepth {
			return
		}
		if n.Kind == yaml.ScalarNode && len(n.Value) >= minEcho {
			values = append(values, n.Value)
		}
		for i, c := range n.Content {
			if n.Kind == yaml.MappingNode && i%2 == 0 {
				keys = append(keys, c.Value)
				if c.Kind == yaml.ScalarNode {
					continue
				}
			}
			walk(c, depth+1)
		}
	}
	walk(&root, 0)
	var out []string
	for _, v := range values {
		if !strings.ContainsFunc(v, isSpaceOrControl) && !partOfAny(v, keys) {
			out = append(out, v)
		}
	}
	return out
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f || r == '\uFFFD' }

func partOfAny(s string, keys []string) bool {
	for _, k := range keys {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// checkNoValues fails when a diagnostic's summary or detail repeats one of
// values. An artifact's name: is the exception: AGENT_NAME_MISMATCH names it.
func checkNoValues(t *testing.T, ds diag.Diagnostics, values []string) {
	t.Helper()
	for _, d := range ds {
		if d.Code == diag.AgentNameMismatch {
			continue
		}
		msg := d.Summary + "\n" + d.Detail
		for _, v := range values {
			if strings.Contains(msg, v) {
				t.Errorf("diagnostic repeats the value %.40q: %v", v, d)
			}
		}
	}
}

// checkDiags fails on a diagnostic without a catalogued code, or one whose
// range is not in file (when file is not "").
func checkDiags(t *testing.T, ds diag.Diagnostics, file string) {
	t.Helper()
	for _, d := range ds {
		if _, ok := diag.Lookup(d.Code); !ok {
			t.Errorf("diagnostic with uncatalogued code %q: %v", d.Code, d)
		}
		if file != "" && (d.Range == nil || d.Range.File != file) {
			t.Errorf("diagnostic not located in %s: %v", file, d)
		}
	}
}

// stringKeyed reports whether every key of the document data is a string
// (or the merge key). yaml.v3 gives other keys below the top level as the
// text of their value (0x10 as "16"), where heddle keeps the text written.
func stringKeyed(data []byte) bool {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		return false
	}
	ok := true
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if !ok || depth > config.MaxDepth {
			return
		}
		for i, c := range n.Content {
			if n.Kind == yaml.MappingNode && i%2 == 0 {
				if k := c.ShortTag(); k != "!!str" && k != "!!merge" {
					ok = false
				}
			}
			walk(c, depth+1)
		}
	}
	walk(&root, 0)
	return ok
}
