package config_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"go.yaml.in/yaml/v3"
)

// FuzzParseYAML feeds arbitrary bytes to every reader of configuration
// documents: ParseYAML, ParseArtifact, LoadDeployment (as the base file, an
// overlay and a HEDDLE_ value). None may panic; every diagnostic carries a
// catalogued code and a range in the file read; a document ParseYAML accepts
// decodes as yaml.v3 decodes it.
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
		laughs(2, 400),
		"a: " + strings.Repeat("x", 16<<10) + "\n",
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
		if m != nil && !bytes.Contains(data, []byte("${")) && stringKeyed(data) {
			if want, err := yamlDecode(data); err == nil {
				if diff := cmp.Diff(want, m, equalValues); diff != "" {
					t.Errorf("(-yaml.v3 +heddle)\n%s", diff)
				}
			}
		}

		_, ds = config.ParseArtifact("agents/a/agent.yaml", "a", data)
		checkDiags(t, ds, "")

		fsys := fstest.MapFS{"config/api.yaml": {Data: data}, "config/api.x.yaml": {Data: data}}
		environ := []string{"HEDDLE_AI__X=" + string(data), "HEDDLE_AI__MCP_SERVERS__A=" + string(data)}
		_, ds = config.LoadDeployment(config.Options{FS: fsys, Env: "x", Environ: environ})
		checkDiags(t, ds, "")
	})
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
