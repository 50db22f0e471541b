package compile_test

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
)

// TestNoKindsLinked: a program that links no kinds (an embedder who forgot
// the builtin import) is told so, and how to fix it, both where ai: holds a
// kind's section and where an agent grants a kind.
func TestNoKindsLinked(t *testing.T) {
	fs := fstest.MapFS{
		"config/api.yaml":     {Data: []byte("ai:\n  mcp_servers:\n    runbooks: {url: https://runbooks.example.com/mcp}\n")},
		"agents/a/agent.yaml": {Data: []byte("capabilities:\n  - {kind: mcp, server: runbooks}\n")},
	}
	cfg, ds := config.Load(config.Options{FS: fs})
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	_, ds = compile.Compile(compile.Input{Config: cfg, Kinds: grants.NewSet()})
	for _, code := range []diag.Code{diag.ConfigKeyUnknown, diag.CapabilityKindUnknown} {
		i := slices.IndexFunc(ds, func(d diag.Diagnostic) bool { return d.Code == code })
		if i < 0 {
			t.Fatalf("no %s in %v", code, ds.Codes())
		}
		if d := ds[i].Detail; !strings.Contains(d, "links no capability kinds") || !strings.Contains(d, "heddle/builtin") {
			t.Errorf("%s: detail %q does not say that no kinds are linked and how to link them", code, d)
		}
	}
}
