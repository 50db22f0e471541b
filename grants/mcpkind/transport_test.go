package mcpkind_test

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/grants/mcpkind"
)

// compileServers compiles api with the mcp kind alone and returns the
// plan's servers (nil when it has errors) and every diagnostic.
func compileServers(t *testing.T, api string) (mcpkind.Servers, diag.Diagnostics) {
	t.Helper()
	fsys := fstest.MapFS{
		"config/api.yaml":     {Data: []byte(api)},
		"agents/a/agent.yaml": {Data: []byte("capabilities: []\n")},
	}
	cfg, ds := config.Load(config.Options{FS: fsys})
	p, cds := compile.Compile(compile.Input{Config: cfg, Kinds: grants.NewSet(mcpkind.Kind{})})
	ds = append(ds, cds...)
	if p == nil {
		return nil, ds
	}
	return mcpkind.PlanServers(p), ds
}

type found struct {
	Code     diag.Code
	Severity diag.Severity
	Path     string
}

func founds(ds diag.Diagnostics) []found {
	var out []found
	for _, d := range ds {
		out = append(out, found{d.Code, d.Severity, d.Path})
	}
	return out
}

// TestTransportInferred: an entry without transport, as MCP hosts write
// them, is stdio when it sets command and Streamable HTTP when it sets url;
// both or neither is an error at the entry. A written transport decides.
func TestTransportInferred(t *testing.T) {
	t.Parallel()
	const p = "ai.mcp_servers.s"
	for _, tc := range []struct {
		name, entry string
		transport   string // in the plan; "" when it has errors
		want        []found
	}{
		{name: "command", entry: "{command: mcp-server-git, args: [--repository, /srv/repo]}", transport: mcpkind.TransportStdio},
		{name: "url", entry: "{url: https://s.example.com/mcp}", transport: mcpkind.TransportHTTP},
		{name: "url ending in /sse", entry: "{url: https://s.example.com/sse}", transport: mcpkind.TransportHTTP,
			want: []found{{diag.MCPTransportInvalid, diag.SeverityWarning, p + ".url"}}},
		{name: "url ending in /sse/", entry: "{url: https://s.example.com/v1/sse/}", transport: mcpkind.TransportHTTP,
			want: []found{{diag.MCPTransportInvalid, diag.SeverityWarning, p + ".url"}}},
		{name: "written http with /sse", entry: "{transport: http, url: https://s.example.com/sse}", transport: mcpkind.TransportHTTP},
		{name: "written sse", entry: "{transport: sse, url: https://s.example.com/sse}", transport: mcpkind.TransportSSE},
		{name: "written stdio", entry: "{transport: stdio, command: mcp-server-git}", transport: mcpkind.TransportStdio},
		{name: "both", entry: "{command: mcp-server-git, url: https://s.example.com/mcp}",
			want: []found{{diag.MCPConnectionConflict, diag.SeverityError, p}}},
		{name: "neither", entry: "{timeout_ms: 5000}",
			want: []found{{diag.MCPTransportInvalid, diag.SeverityError, p}}},
		{name: "empty", entry: "{}",
			want: []found{{diag.MCPTransportInvalid, diag.SeverityError, p}}},
		{name: "url with args", entry: "{url: https://s.example.com/mcp, args: [-v]}",
			want: []found{{diag.MCPConnectionConflict, diag.SeverityError, p + ".args"}}},
		{name: "command with headers_ref", entry: "{command: mcp-server-git, headers_ref: '${env:K}'}",
			want: []found{{diag.MCPStdioAuth, diag.SeverityError, p + ".headers_ref"}}},
		// As today: a written transport with the other transport's keys.
		{name: "written http with command", entry: "{transport: http, url: https://s.example.com/mcp, command: x}",
			want: []found{{diag.MCPConnectionConflict, diag.SeverityError, p + ".command"}}},
		{name: "written stdio with url", entry: "{transport: stdio, command: x, url: https://s.example.com/mcp}",
			want: []found{{diag.MCPConnectionConflict, diag.SeverityError, p + ".url"}}},
		{name: "written http without url", entry: "{transport: http}",
			want: []found{{diag.MCPURLInvalid, diag.SeverityError, p + ".url"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			servers, ds := compileServers(t, "ai:\n  mcp_servers:\n    s: "+tc.entry+"\n")
			if d := cmp.Diff(tc.want, founds(ds)); d != "" {
				t.Errorf("diagnostics (-want +got):\n%s", d)
			}
			if tc.transport == "" {
				if servers != nil {
					t.Errorf("a plan despite errors: %+v", servers)
				}
				return
			}
			if s := servers["s"]; s == nil || s.Transport != tc.transport {
				t.Fatalf("plan's server = %+v, want transport %s", s, tc.transport)
			}
		})
	}
}
