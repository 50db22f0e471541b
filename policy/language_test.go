package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/heddlehq/heddle"
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

// matchAll is a Condition that matches every call and cannot be evaluated
// with the arguments unknown: not a PartialCondition.
type matchAll struct{}

func (matchAll) Match(context.Context, Input) (bool, error) { return true, nil }

// TestListedNotPartial: a rule whose condition cannot be evaluated with
// the arguments unknown keeps the tool listed, even when it denies every
// call: Listed hides only what it can tell is denied.
func TestListedNotPartial(t *testing.T) {
	s := newSet(Ask, "policies.approval", []rule{{effect: Deny, cond: matchAll{}, reason: "r"}})
	tool := Tool{Name: "t", OriginalName: "t"}
	if d := s.Decide(context.Background(), Input{Tool: tool}); d.Effect != Deny {
		t.Fatalf("Decide = %s, want deny", d.Effect)
	}
	if !s.Listed(context.Background(), tool, heddle.Identity{}) {
		t.Error("Listed = false for a condition that cannot tell, want true")
	}
}
