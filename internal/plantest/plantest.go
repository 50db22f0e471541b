// Package plantest compiles plans from YAML text, for the tests of the
// packages that open them:
//
//	p := plantest.Must(t, `
//	ai:
//	  mcp_servers:
//	    a: {transport: stdio, command: heddle-testmcp}
//	`, map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`})
package plantest

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/grants/a2akind"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/grants/sqlkind"
	"github.com/heddlehq/heddle/grants/usecasekind"
	"github.com/heddlehq/heddle/plan"
)

// Compile compiles api (an api.yaml) and agents (agent name → agent.yaml)
// as heddle check would; usecases are the registered use-case keys.
func Compile(api string, agents map[string]string, usecases ...string) (*plan.Plan, error) {
	fsys := fstest.MapFS{"config/api.yaml": {Data: []byte(api)}}
	for name, a := range agents {
		fsys["agents/"+name+"/agent.yaml"] = &fstest.MapFile{Data: []byte(a)}
	}
	cfg, ds := config.Load(config.Options{FS: fsys})
	p, cds := compile.Compile(compile.Input{Config: cfg, Kinds: kinds(), Usecases: usecases})
	if ds = append(ds, cds...); ds.HasErrors() {
		return nil, ds.Err()
	}
	return p, nil
}

// kinds is the program's set of kinds, or, in a test binary that links no
// set (the runtime's own tests cannot link package builtin), the config
// halves of the built-in kinds.
func kinds() *grants.Set {
	if d := grants.Default(); len(d.Kinds()) > 0 {
		return d
	}
	return grants.NewSet(mcpkind.Kind{}, usecasekind.Kind{}, sqlkind.Kind{}, a2akind.Kind{})
}

// Must is Compile that fails the test on any error.
func Must(t testing.TB, api string, agents map[string]string, usecases ...string) *plan.Plan {
	t.Helper()
	p, err := Compile(api, agents, usecases...)
	if err != nil {
		t.Fatalf("compile: %v\napi.yaml:\n%s", err, api)
	}
	return p
}

// Text concatenates a result's text parts.
func Text(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
