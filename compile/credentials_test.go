package compile_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/internal/plantest"
)

// TestCredentialsInlineSeverity: a literal under a credential's name in a
// stdio server's env is a warning (the name is a guess), everything else
// MCP_CREDENTIALS_INLINE reports — a plugin's setting, a header, a URL's
// userinfo — an error.
func TestCredentialsInlineSeverity(t *testing.T) {
	for file, want := range map[string]map[string]diag.Severity{
		"testdata/mcp_credentials_env.txtar": {
			"ai.mcp_servers.git.env.GITHUB_TOKEN":   diag.SeverityWarning,
			"ai.mcp_servers.git.env.OPENAI_API_KEY": diag.SeverityWarning,
			"ai.mcp_servers.git.env.DB_PASSWORD":    diag.SeverityWarning,
			"ai.mcp_servers.git.args[1]":            diag.SeverityError,
		},
		"testdata/mcp_credentials_plugin.txtar": {
			"ai.mcp_servers.sales.auth.api_key":          diag.SeverityError,
			"ai.mcp_servers.sales.auth.clientSecret":     diag.SeverityError,
			"ai.mcp_servers.sales.auth.password":         diag.SeverityError,
			"ai.mcp_servers.sales.auth.upstream":         diag.SeverityError,
			"ai.mcp_servers.sales.auth.mirrors[1]":       diag.SeverityError,
			"ai.mcp_servers.directory.auth.redirect_url": diag.SeverityError,
		},
		"testdata/mcp_headers.txtar": {
			"ai.mcp_servers.literal.headers.Authorization":   diag.SeverityError,
			"ai.mcp_servers.literal.headers.x-api-key":       diag.SeverityError,
			"ai.mcp_servers.malformed.headers.Authorization": diag.SeverityError,
			"ai.mcp_servers.malformed.headers.X-Upstream":    diag.SeverityError,
		},
	} {
		got := map[string]diag.Severity{}
		for _, d := range run(readFixture(t, file)) {
			if _, asked := want[d.Path]; asked && d.Code == diag.MCPCredentialsInline {
				got[d.Path] = d.Severity
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: MCP_CREDENTIALS_INLINE severities (-want +got):\n%s", file, d)
		}
	}
}

// TestHeadersInThePlan: a server's headers reach the plan by canonical
// name, a reference as the reference written (never a value), a plain
// value as written.
func TestHeadersInThePlan(t *testing.T) {
	t.Parallel()
	p := plantest.Must(t, `ai:
  mcp_servers:
    crm:
      url: https://crm.example.com/mcp
      headers: {x-tenant-id: acme, Authorization: "${env:CRM_AUTHORIZATION}"}
`, map[string]string{"x": "capabilities: [{kind: mcp, server: crm}]\n"})
	b, err := json.Marshal(mcpkind.PlanServers(p)["crm"].Headers)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Authorization":{"ref":"${env:CRM_AUTHORIZATION}"},"X-Tenant-Id":{"value":"acme"}}`
	if string(b) != want {
		t.Errorf("the plan's headers: %s, want %s", b, want)
	}
}
