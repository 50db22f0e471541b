package compile_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/plan"
)

// TestMCPIdentity: mcp.identity is the plan's, as written, and in its JSON
// only when set.
func TestMCPIdentity(t *testing.T) {
	t.Parallel()
	const agents = "capabilities: [{kind: mcp, server: a}]\n"
	const ai = "ai:\n  mcp_servers:\n    a: {url: https://a.example.com/mcp}\n"
	p := plantest.Must(t, ai+"mcp:\n  identity: {subject: local-user, roles: [developer], claims: {team: payments}}\n", map[string]string{"x": agents})
	want := &plan.MCPIdentity{Subject: "local-user", Roles: []string{"developer"}, Claims: map[string]string{"team": "payments"}}
	if d := cmp.Diff(want, p.MCP.Identity); d != "" {
		t.Errorf("plan's mcp.identity (-want +got):\n%s", d)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"mcp":{"identity":{"subject":"local-user"`) {
		t.Errorf("the plan's JSON has no mcp.identity: %s", b)
	}
	p = plantest.Must(t, ai, map[string]string{"x": agents})
	if b, _ := json.Marshal(p); p.MCP.Identity != nil || strings.Contains(string(b), `"mcp":`) {
		t.Errorf("a plan without mcp.identity has one: %+v, %s", p.MCP, b)
	}
}
