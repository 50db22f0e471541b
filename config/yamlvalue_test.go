package config_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"go.yaml.in/yaml/v3"
)

// yamlDecode decodes data as yaml.v3 does, with keys turned into their text.
func yamlDecode(data []byte) (map[string]any, error) {
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	v, _ := stringKeys(m).(map[string]any)
	if v == nil {
		v = map[string]any{}
	}
	return v, nil
}

func stringKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = stringKeys(e)
		}
		return t
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[fmt.Sprint(k)] = stringKeys(e)
		}
		return out
	case []any:
		for i, e := range t {
			t[i] = stringKeys(e)
		}
	}
	return v
}

var equalValues = cmpopts.EquateNaNs()

// TestParseYAMLMatchesYAMLv3 checks that heddle's decoding of a checked
// document gives what yaml.v3's decoder gives: scalars, aliases and merge
// keys alike.
func TestParseYAMLMatchesYAMLv3(t *testing.T) {
	for _, doc := range []string{
		"a: 1\nb: [x, 2.5, true, ~, '3', -0x1F, 1e3, .inf, .nan, 0o17]\nc: {d: e}\n",
		"a: ~\nb: null\nc:\nd: []\ne: {}\n",
		"a: |\n  x\n  y\nb: >-\n  z\n  w\nc: \"q\\tr\"\n",
		"a: !!str 1\nb: !!float 1\nc: !!binary aGVsbG8=\nd: 2001-12-14\ne: !!int '7'\nf: !custom x\n",
		"base: &b {x: 1, y: [1, 2]}\nuse: *b\nlist: [*b, *b]\n",
		"a: &s text\nb: *s\nc: [*s]\n",
		"base: &b {x: 1, y: 2}\nm: {<<: *b, y: 3}\nn: {y: 3, <<: *b}\n",
		"a: &a {x: 1}\nb: &b {x: 2, y: 2}\nc: {<<: [*a, *b], z: 3}\n",
		"a: &a {x: 1}\nb: &b {<<: *a, y: 2}\nc: {<<: *b, z: ~}\n",
		"c: {<<: {x: 1, y: {z: 2}}, y: 3}\n",
		"a: &k key\n*k : 2\n",
		"&k a: 1\nb: *k\n",
		"1: x\ntrue: y\n1.5: z\nn: {1: a, false: b}\n",
		"a: {\"run.books\": {url: x}, \"a]b\": 1}\n",
		"a:\n  - b: 1\n    c: [1, {d: 2}]\n  - &e {f: g}\n  - *e\n",
	} {
		got, ds := config.ParseYAML("api.yaml", []byte(doc))
		if len(ds) > 0 {
			t.Errorf("%q: %v", doc, ds)
			continue
		}
		want, err := yamlDecode([]byte(doc))
		if err != nil {
			t.Fatalf("%q: yaml.v3: %v", doc, err)
		}
		if diff := cmp.Diff(want, got, equalValues); diff != "" {
			t.Errorf("%q: (-yaml.v3 +heddle)\n%s", doc, diff)
		}
	}
}

// TestAliasCopies checks that what an alias expands to is a value of its
// own: changing one copy leaves the others alone.
func TestAliasCopies(t *testing.T) {
	m, ds := config.ParseYAML("api.yaml", []byte("a: &a {x: [1]}\nb: *a\nc: {<<: *a}\n"))
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	m["b"].(map[string]any)["x"].([]any)[0] = 2
	delete(m["c"].(map[string]any), "x")
	if got := m["a"].(map[string]any)["x"].([]any)[0]; got != 1 {
		t.Errorf("a.x[0] = %v after changing b", got)
	}
}

// TestDecodeProblems locates problems found while decoding at their node.
func TestDecodeProblems(t *testing.T) {
	for _, tc := range []struct{ doc, at string }{
		{"a: 1\nb: !!int x\n", "2:4"},
		{"a:\n  b: !!binary '%%'\n", "2:6"},
		{"a: {<<: 1}\n", "1:9"},
		{"a: {<<: [{b: 1}, 2]}\n", "1:18"},
		{"a: &s x\nb: {<<: *s}\n", "2:9"},
		{"a: {<<: {b: 1}, <<: {c: 1}}\n", "1:17"},
	} {
		_, ds := config.ParseYAML("api.yaml", []byte(tc.doc))
		if len(ds) != 1 || ds[0].Code != diag.ConfigParse || ds[0].Range == nil {
			t.Errorf("%q: %v, want one CONFIG_PARSE", tc.doc, ds)
			continue
		}
		if at := fmt.Sprintf("%d:%d", ds[0].Range.Line, ds[0].Range.Column); at != tc.at {
			t.Errorf("%q: at %s, want %s", tc.doc, at, tc.at)
		}
	}
}

// TestOddKeys checks keys that hold dots, brackets or nothing all the way
// to strict decoding: the path and key named are the ones written.
func TestOddKeys(t *testing.T) {
	_, ds := config.ParseArtifact("agents/a/agent.yaml", "a", []byte("name: a\n\"policies.approval\": ask\n"))
	wantDiag(t, ds, diag.ConfigKeyUnknown, `["policies.approval"]`, "agents/a/agent.yaml:2:1")

	type server struct {
		URL string `koanf:"url"`
	}
	var servers map[string]server
	in := map[string]any{
		"run.books": map[string]any{"url": "https://x", "timeout.msec": 1},
		"a]b":       map[string]any{"url": []any{1}},
	}
	ds = config.DecodeStrict(in, &servers, "ai.mcp_servers")
	ds.Sort()
	got := fmt.Sprint(ds.Codes(), paths(ds))
	want := fmt.Sprint([]diag.Code{diag.ConfigValueInvalid, diag.ConfigKeyUnknown},
		[]string{`ai.mcp_servers["a]b"].url`, `ai.mcp_servers["run.books"]["timeout.msec"]`})
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}

	var s server
	ds = config.DecodeStrict(map[string]any{"": 1}, &s, "")
	wantDiag(t, ds, diag.ConfigKeyUnknown, `[""]`, "")
}

func paths(ds diag.Diagnostics) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Path)
	}
	return out
}

func wantDiag(t *testing.T, ds diag.Diagnostics, code diag.Code, path, at string) {
	t.Helper()
	if len(ds) != 1 || ds[0].Code != code || ds[0].Path != path {
		t.Fatalf("got %v, want one %s at %s", ds, code, path)
	}
	if at != "" && ds[0].Range.String() != at {
		t.Errorf("located at %s, want %s", ds[0].Range, at)
	}
}
