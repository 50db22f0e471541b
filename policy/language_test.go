package policy

import (
	"strings"
	"testing"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
)

// TestNoLanguageRefusesRules: a program that links no language for rules
// refuses an agent's rules, saying how to link one, rather than ignoring
// them; denied_tools and approval need none.
func TestNoLanguageRefusesRules(t *testing.T) {
	languageMu.Lock()
	saved := language
	language = nil
	languageMu.Unlock()
	t.Cleanup(func() {
		languageMu.Lock()
		language = saved
		languageMu.Unlock()
	})

	s, ds := New(plan.Policies{Rules: []plan.Rule{{When: "true", Effect: "allow"}}}, "policies")
	if s != nil || !ds.HasErrors() || ds[0].Code != diag.PolicyInvalid || ds[0].Path != "policies.rules[0].when" ||
		!strings.Contains(ds[0].Detail, "policy/celrules") {
		t.Fatalf("New with a rule and no language = %v, %v; want POLICY_INVALID at policies.rules[0].when naming policy/celrules", s, ds)
	}
	s, ds = New(plan.Policies{Approval: "deny", DeniedTools: []string{"drop_*"}}, "policies")
	if s == nil || ds.HasErrors() {
		t.Fatalf("New without rules and no language = %v, %v; want a set", s, ds)
	}
	if d := s.Decide(t.Context(), Input{Tool: Tool{Name: "drop_table"}}); d.Effect != Deny {
		t.Errorf("drop_table: %v, want deny by denied_tools", d.Effect)
	}
}
