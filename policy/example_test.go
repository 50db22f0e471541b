package policy_test

import (
	_ "github.com/heddlehq/heddle/policy/celrules" // the rules' language

	"context"
	"fmt"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/policy"
)

// Example compiles the policies of an agent.yaml and decides three calls.
func Example() {
	set, ds := policy.New(plan.Policies{
		Approval:    "ask",
		DeniedTools: []string{"delete_*"},
		Rules: []plan.Rule{
			{When: `tool.destructive && !("sre" in caller.roles)`, Effect: "deny"},
			{When: `tool.server == "runbooks" && args.?limit.orValue(0) > 100`, Effect: "ask"},
		},
	}, "policies")
	if err := ds.Err(); err != nil {
		fmt.Println(err)
		return
	}

	restart := policy.Tool{Name: "restart_service", Server: "ops", Kind: "mcp", Destructive: true}
	search := policy.Tool{Name: "search", Server: "runbooks", Kind: "mcp", ReadOnly: true}
	ctx := context.Background()
	for _, in := range []policy.Input{
		{Tool: restart, Caller: heddle.Identity{Subject: "alice", Roles: []string{"sre"}}},
		{Tool: restart, Caller: heddle.Identity{Subject: "bob", Roles: []string{"dev"}}},
		{Tool: search, Caller: heddle.Identity{Subject: "bob"}, Args: map[string]any{"limit": 500}},
		{Tool: search, Caller: heddle.Identity{Subject: "bob"}},
		{Tool: policy.Tool{Name: "delete_user", Destructive: true}, Caller: heddle.Identity{Subject: "alice", Roles: []string{"sre"}}},
	} {
		d := set.Decide(ctx, in)
		fmt.Printf("%s as %s: %s (%s)\n", in.Tool.Name, in.Caller.Subject, d.Effect, d.Reason)
	}

	// Rules are type-checked when they are compiled.
	_, ds = policy.Compile([]plan.Rule{{When: `"sre" in caller.rolez`, Effect: "deny"}}, "policies")
	fmt.Println(ds[0].Code, ds[0].Path)

	// Output:
	// restart_service as alice: ask (destructive tool; policies.approval is ask)
	// restart_service as bob: deny (denied by policies.rules[0])
	// search as bob: ask (policies.rules[1] requires approval)
	// search as bob: allow (no rule matched)
	// delete_user as alice: deny (tool "delete_user" matches policies.denied_tools[0] ("delete_*"))
	// POLICY_INVALID policies.rules[0].when
}
