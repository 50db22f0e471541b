package celrules

import (
	"context"
	"testing"

	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/policy"
)

// TestToolFlags: rules read tool.flags, a list that is empty (not an
// error) for a tool screening found nothing in.
func TestToolFlags(t *testing.T) {
	s := mustNew(t, plan.Policies{Approval: "allow", Rules: []plan.Rule{
		{When: `size(tool.flags) > 0 && !("shadowing" in tool.flags && tool.flags.size() == 1)`, Effect: "deny"},
		{When: `"shadowing" in tool.flags`, Effect: "ask"},
	}})
	flagged := search
	flagged.Flags = []string{"hidden_unicode", "instructions"}
	shadowing := search
	shadowing.Flags = []string{"shadowing"}
	for _, tc := range []struct {
		name string
		tool policy.Tool
		want policy.Effect
	}{
		{"no flags", search, policy.Allow},
		{"flagged", flagged, policy.Deny},
		{"shadowing", shadowing, policy.Ask},
	} {
		if got := s.Decide(context.Background(), policy.Input{Tool: tc.tool}).Effect; got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
