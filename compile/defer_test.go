package compile_test

import (
	"testing"
	"testing/fstest"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
)

// TestDeferReachesThePlan: defer: is the compiler's, read for every kind
// before the kind decodes the rest, and recorded on the plan's grant.
func TestDeferReachesThePlan(t *testing.T) {
	fs := fstest.MapFS{
		"config/api.yaml": {Data: []byte("ai:\n  mcp_servers:\n    runbooks: {url: https://runbooks.example.com/mcp}\n")},
		"agents/a/agent.yaml": {Data: []byte(`capabilities:
  - {kind: mcp, server: runbooks, defer: true}
  - {kind: usecase, keys: [incidents.get_incident]}
`)},
	}
	cfg, ds := config.Load(config.Options{FS: fs})
	p, cds := compile.Compile(compile.Input{Config: cfg, Usecases: []string{"incidents.get_incident"}})
	if ds = append(ds, cds...); ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	got := p.Agents["a"].Grants
	if len(got) != 2 || !got[0].Defer || got[1].Defer {
		t.Fatalf("grants = %+v; want the mcp grant deferred and the usecase grant not", got)
	}
}
