package celrules

import (
	"context"
	"testing"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/policy"
)

// TestListedUnknownArgs: Listed hides a tool only when the caller's every
// call of it is denied whatever the arguments, deciding with CEL's partial
// evaluation; a rule whose outcome depends on an argument keeps it listed.
// Whatever Listed says, Decide agrees: a hidden tool's calls are denied for
// every set of arguments tried.
func TestListedUnknownArgs(t *testing.T) {
	sreOnly := plan.Rule{When: `tool.destructive && !("sre" in caller.roles)`, Effect: "deny"}
	tests := []struct {
		name   string
		p      plan.Policies
		tool   policy.Tool
		caller heddle.Identity
		want   bool
	}{
		{"denied by the caller's roles", plan.Policies{Rules: []plan.Rule{sreOnly}}, restart, dev, false},
		{"allowed by the caller's roles", plan.Policies{Rules: []plan.Rule{sreOnly}}, restart, sre, true},
		{"anonymous", plan.Policies{Rules: []plan.Rule{sreOnly}}, restart, anonymous, false},
		{"the rule does not apply to the tool", plan.Policies{Rules: []plan.Rule{sreOnly}}, search, dev, true},
		{"a deny that depends on an argument", plan.Policies{Rules: []plan.Rule{
			{When: `tool.destructive && args.service == "db"`, Effect: "deny"}}}, restart, dev, true},
		{"a deny on an argument's presence", plan.Policies{Rules: []plan.Rule{
			{When: `has(args.force)`, Effect: "deny"}}}, search, dev, true},
		{"an argument read with a default", plan.Policies{Rules: []plan.Rule{
			{When: `args.?limit.orValue(0) > 100`, Effect: "deny"}}}, search, dev, true},
		{"an argument that cannot matter", plan.Policies{Rules: []plan.Rule{
			{When: `!("sre" in caller.roles) && (args.limit > 100 || true)`, Effect: "deny"}}}, search, dev, false},
		{"a caller's claim", plan.Policies{Rules: []plan.Rule{
			{When: `caller.claims.team != "platform"`, Effect: "deny"}}}, search, dev, false},
		{"an allow before the deny", plan.Policies{Rules: []plan.Rule{
			{When: `caller.subject == "bob"`, Effect: "allow"}, sreOnly}}, restart, dev, true},
		{"an argument-dependent allow before the deny", plan.Policies{Rules: []plan.Rule{
			{When: `args.dry_run == true`, Effect: "allow"}, sreOnly}}, restart, dev, true},
		{"an argument-dependent deny before the deny", plan.Policies{Rules: []plan.Rule{
			{When: `args.dry_run == false`, Effect: "deny"}, sreOnly}}, restart, dev, false},
		{"an argument-dependent deny, then approval", plan.Policies{Approval: "ask", Rules: []plan.Rule{
			{When: `args.dry_run == false`, Effect: "deny"}}}, restart, dev, true},
		{"an ask whatever the arguments", plan.Policies{Rules: []plan.Rule{
			{When: `tool.destructive`, Effect: "ask"}, sreOnly}}, restart, dev, true},
		{"approval deny", plan.Policies{Approval: "deny"}, restart, sre, false},
		{"approval deny, read-only tool", plan.Policies{Approval: "deny"}, search, sre, true},
		{"approval deny after an argument-dependent allow", plan.Policies{Approval: "deny", Rules: []plan.Rule{
			{When: `args.dry_run == true`, Effect: "allow"}}}, restart, sre, true},
		{"denied_tools", plan.Policies{Approval: "allow", DeniedTools: []string{"restart_*"}}, restart, sre, false},
		{"a rule that fails whatever the arguments keeps the tool", plan.Policies{Rules: []plan.Rule{
			{When: `caller.claims["missing"] == "x"`, Effect: "allow"}}}, search, dev, true},
		{"no policies", plan.Policies{}, restart, dev, true},
	}
	argSets := []map[string]any{nil, {}, {"service": "db"}, {"service": "web"}, {"force": true},
		{"limit": 5}, {"limit": 500}, {"dry_run": true}, {"dry_run": false}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, tc.p)
			if got := s.Listed(context.Background(), tc.tool, tc.caller); got != tc.want {
				t.Errorf("Listed = %v, want %v", got, tc.want)
			}
			if tc.want {
				return
			}
			for _, args := range argSets {
				if d := s.Decide(context.Background(), policy.Input{Tool: tc.tool, Caller: tc.caller, Args: args}); d.Effect != policy.Deny {
					t.Errorf("hidden, yet Decide(%v) = %s", args, d.Effect)
				}
			}
		})
	}
}
