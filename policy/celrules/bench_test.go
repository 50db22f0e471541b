package celrules

import (
	"context"
	"testing"

	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/policy"
)

// BenchmarkCompile measures policy.New on the design's policies block: two rules,
// one glob and the approval setting.
func BenchmarkCompile(b *testing.B) {
	p := plan.Policies{Approval: "ask", DeniedTools: []string{"delete_*"}, Rules: designRules}
	celEnv() // building the shared environment is a one-time cost
	b.ReportAllocs()
	for b.Loop() {
		if _, ds := policy.New(p, "policies"); ds.HasErrors() {
			b.Fatal(ds.Err())
		}
	}
}

// BenchmarkDecide measures one decision against the same policies.
func BenchmarkDecide(b *testing.B) {
	s := mustNew(b, plan.Policies{Approval: "ask", DeniedTools: []string{"delete_*"}, Rules: designRules})
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		set  *policy.Set
		in   policy.Input
	}{
		{"no rules", mustNew(b, plan.Policies{}), policy.Input{Tool: restart, Caller: dev}},
		{"denied glob", s, policy.Input{Tool: deleteUser, Caller: sre}},
		{"first rule denies", s, policy.Input{Tool: restart, Caller: dev}},
		{"both rules, none match", s, policy.Input{Tool: search, Caller: sre, Args: map[string]any{"limit": 10.0}}},
		{"fails closed", s, policy.Input{Tool: search, Caller: sre}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.set.Decide(ctx, bc.in)
			}
		})
	}
}

// BenchmarkListed measures whether one tool may be listed to one caller
// against the same policies: what a caller's list costs per tool.
func BenchmarkListed(b *testing.B) {
	s := mustNew(b, plan.Policies{Approval: "ask", DeniedTools: []string{"delete_*"}, Rules: designRules})
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		set  *policy.Set
		tool policy.Tool
	}{
		{"no rules", mustNew(b, plan.Policies{}), restart},
		{"denied glob", s, deleteUser},
		{"first rule hides", s, restart},
		{"second rule depends on args", s, search},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.set.Listed(ctx, bc.tool, dev)
			}
		})
	}
}
