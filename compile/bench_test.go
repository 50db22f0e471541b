package compile_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/grants/mcpkind"
)

// LargeConfig returns a deployment of servers MCP servers and agents
// artifacts, each agent granting five servers with filters and a CEL rule.
func largeConfig(agents, servers int) fstest.MapFS {
	var api strings.Builder
	api.WriteString("ai:\n  startup_timeout_ms: 10000\n  mcp_servers:\n")
	for s := range servers {
		fmt.Fprintf(&api, "    srv%03d:\n      url: https://srv%03d.example.com/mcp\n      auth:\n        kind: bearer\n        token_ref: ${secrets:/heddle/srv%03d/token}\n      timeout_ms: 20000\n", s, s, s)
	}
	fsys := fstest.MapFS{"config/api.yaml": {Data: []byte(api.String())}}
	for a := range agents {
		var b strings.Builder
		fmt.Fprintf(&b, "name: agent%03d\ncapabilities:\n", a)
		for g := range 5 {
			fmt.Fprintf(&b, "  - {kind: mcp, server: srv%03d, include: [\"search_*\", \"get_*\"], exclude: [\"delete_*\"]}\n", (a+g*7)%servers)
		}
		b.WriteString("policies:\n  tool_timeout_ms: 25000\n  rules:\n    - {when: 'tool.destructive && !(\"sre\" in caller.roles)', effect: deny}\n")
		fsys[fmt.Sprintf("agents/agent%03d/agent.yaml", a)] = &fstest.MapFile{Data: []byte(b.String())}
	}
	return fsys
}

// TestLargeConfigCompiles checks 200 agents × 50 servers compile cleanly.
func TestLargeConfigCompiles(t *testing.T) {
	cfg, ds := config.Load(config.Options{FS: largeConfig(200, 50)})
	p, cds := compile.Compile(compile.Input{Config: cfg})
	if ds = append(ds, cds...); len(ds) > 0 {
		t.Fatalf("diagnostics: %v", ds)
	}
	if len(p.Agents) != 200 || len(mcpkind.PlanServers(p)) != 50 {
		t.Fatalf("plan has %d agents and %d servers", len(p.Agents), len(mcpkind.PlanServers(p)))
	}
}

// BenchmarkCompile measures loading and compiling 200 agents × 50 servers
// and reports the cost per agent.
func BenchmarkCompile(b *testing.B) {
	const agents, servers = 200, 50
	fsys := largeConfig(agents, servers)
	b.ReportAllocs()
	for b.Loop() {
		cfg, _ := config.Load(config.Options{FS: fsys})
		if p, ds := compile.Compile(compile.Input{Config: cfg}); p == nil {
			b.Fatal(ds)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/agents, "µs/agent")
}

// BenchmarkCompileOnly measures compiling alone (configuration already loaded).
func BenchmarkCompileOnly(b *testing.B) {
	const agents, servers = 200, 50
	cfg, _ := config.Load(config.Options{FS: largeConfig(agents, servers)})
	b.ReportAllocs()
	for b.Loop() {
		if p, ds := compile.Compile(compile.Input{Config: cfg}); p == nil {
			b.Fatal(ds)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/agents, "µs/agent")
}
