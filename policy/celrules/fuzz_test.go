package celrules

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/policy"
)

// FuzzCompile feeds arbitrary rule text to policy.Compile, and decides with what
// compiles. Neither may panic; policy.Compile must return a policy.Set exactly when it
// reports no error, and every diagnostic must be POLICY_INVALID at the rule.
// A tool Listed hides must be denied by Decide with the fuzzed arguments.
func FuzzCompile(f *testing.F) {
	for _, r := range designRules {
		f.Add(r.When, r.Effect)
	}
	for _, w := range []string{
		`caller.rolez`,
		`tool.name`,
		`args.limit > 100`,
		`args.?limit.orValue(0) > 100 && has(args.query)`,
		`caller.roles.exists(r, r.startsWith("s"))`,
		`caller.claims.team == "payments"`,
		`tool.name.matches("[")`,
		`string(args.sql).lowerAscii().split(" ").size() > 2`,
		"tool.name == 1 &&\n  toool.x",
		`[1, 2, 3].map(x, x * 2).size() == 3`,
		`((((((true))))))`,
		`"\xff" == tool.name`,
		``,
	} {
		f.Add(w, "deny")
	}
	f.Add(`true`, "")
	f.Add(`true`, "Allow")

	in := policy.Input{
		Tool:   policy.Tool{Name: "search", OriginalName: "search", Server: "runbooks", Kind: "mcp", ReadOnly: true},
		Caller: heddle.Identity{Subject: "alice", Roles: []string{"sre", "oncall"}, Claims: map[string]string{"team": "platform"}},
		Args:   map[string]any{"limit": 500.0, "query": "q", "sql": "select 1", "nested": map[string]any{"a": []any{1.0, "x"}}},
	}
	f.Fuzz(func(t *testing.T, when, effect string) {
		set, ds := policy.Compile([]plan.Rule{{When: when, Effect: effect}}, "policies")
		if (set == nil) != ds.HasErrors() {
			t.Fatalf("set = %p with errors %v", set, ds)
		}
		for _, d := range ds {
			if d.Code != diag.PolicyInvalid || !strings.HasPrefix(d.Path, "policies.rules[0].") || strings.Contains(d.Summary, "\n") {
				t.Fatalf("unexpected diagnostic %#v", d)
			}
		}
		if set == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d := set.Decide(ctx, in)
		if d.Rule != 0 && d.Rule != -1 {
			t.Fatalf("Decide rule = %d", d.Rule)
		}
		if d.Cause != nil && d.Effect != policy.Deny {
			t.Fatalf("evaluation error %v did not deny", d.Cause)
		}
		if !set.Listed(ctx, in.Tool, in.Caller) && d.Effect != policy.Deny && ctx.Err() == nil {
			t.Fatalf("Listed hides the tool, yet Decide = %s", d.Effect)
		}
	})
}
