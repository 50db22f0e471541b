package compile_test

import (
	"encoding/json"
	"fmt"
	"testing/fstest"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
)

// A deployment and one agent, compiled as `heddle check` compiles them:
// every problem is reported with its code, file, line and path, and a plan
// comes only from a configuration without errors.
func ExampleCompile() {
	fsys := fstest.MapFS{
		"config/api.yaml": {Data: []byte(`
ai:
  mcp_servers:
    runbooks: {transport: stdio, command: runbooks-server}
`)},
		"agents/triage/agent.yaml": {Data: []byte(`
capabilities:
  - {kind: mcp, server: runbooks, include: ["search_*"]}
  - {kind: mcp, server: runbook}
`)},
	}
	cfg, ds := config.Load(config.Options{FS: fsys})
	p, cds := compile.Compile(compile.Input{Config: cfg})
	for _, d := range append(ds, cds...) {
		fmt.Printf("%s:%d %s %s\n", d.Range.File, d.Range.Line, d.Code, d.Path)
	}
	fmt.Println("plan:", p != nil)

	// Without the stray grant the plan is made: pure data, with every
	// default filled in.
	fsys["agents/triage/agent.yaml"] = &fstest.MapFile{Data: []byte(`
capabilities:
  - {kind: mcp, server: runbooks, include: ["search_*"]}
`)}
	cfg, _ = config.Load(config.Options{FS: fsys})
	p, _ = compile.Compile(compile.Input{Config: cfg})
	grant, _ := json.Marshal(p.Agents["triage"].Grants[0])
	fmt.Println(string(grant))
	// Output:
	// agents/triage/agent.yaml:4 MCP_SERVER_UNKNOWN capabilities[1].server
	// plan: false
	// {"kind":"mcp","spec":{"server":"runbooks","include":["search_*"]}}
}
