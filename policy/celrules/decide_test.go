package celrules

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/policy"
)

// mustNew builds a policy.Set or fails the test.
func mustNew(t testing.TB, p plan.Policies) *policy.Set {
	t.Helper()
	s, ds := policy.New(p, "policies")
	if err := ds.Err(); err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

var (
	deleteUser  = policy.Tool{Name: "delete_user", OriginalName: "delete_user", Server: "users", Kind: "mcp", Destructive: true}
	restart     = policy.Tool{Name: "restart_service", OriginalName: "restart_service", Server: "ops", Kind: "mcp", Destructive: true}
	search      = policy.Tool{Name: "search", OriginalName: "search", Server: "runbooks", Kind: "mcp", ReadOnly: true, Idempotent: true}
	sre         = heddle.Identity{Subject: "alice", Roles: []string{"oncall", "sre"}, Claims: map[string]string{"team": "platform"}}
	dev         = heddle.Identity{Subject: "bob", Roles: []string{"dev"}, Claims: map[string]string{"team": "payments"}}
	anonymous   = heddle.Identity{}
	designRules = []plan.Rule{
		{When: `tool.destructive && !("sre" in caller.roles)`, Effect: "deny"},
		{When: `tool.server == "runbooks" && args.limit > 100`, Effect: "ask"},
	}
)

func TestDecide(t *testing.T) {
	tests := []struct {
		name     string
		p        plan.Policies
		in       policy.Input
		want     policy.Effect
		wantRule int
	}{
		// No rules: the approval setting decides for destructive tools.
		{"destructive, approval ask", plan.Policies{Approval: "ask"}, policy.Input{Tool: restart}, policy.Ask, -1},
		{"destructive, approval allow", plan.Policies{Approval: "allow"}, policy.Input{Tool: restart}, policy.Allow, -1},
		{"destructive, approval deny", plan.Policies{Approval: "deny"}, policy.Input{Tool: restart}, policy.Deny, -1},
		{"destructive, approval unset", plan.Policies{}, policy.Input{Tool: restart}, policy.Ask, -1},
		{"read-only, approval ask", plan.Policies{Approval: "ask"}, policy.Input{Tool: search}, policy.Allow, -1},
		{"read-only, approval deny", plan.Policies{Approval: "deny"}, policy.Input{Tool: search}, policy.Allow, -1},

		// denied_tools come first, over the model-facing or original name.
		{"denied glob", plan.Policies{Approval: "allow", DeniedTools: []string{"delete_*"}}, policy.Input{Tool: deleteUser, Caller: sre}, policy.Deny, -1},
		{"denied glob on original name", plan.Policies{Approval: "allow", DeniedTools: []string{"delete_*"}},
			policy.Input{Tool: policy.Tool{Name: "users__delete_user", OriginalName: "delete_user"}}, policy.Deny, -1},
		{"denied glob beats an allow rule", plan.Policies{DeniedTools: []string{"search"}, Rules: []plan.Rule{{When: "true", Effect: "allow"}}},
			policy.Input{Tool: search}, policy.Deny, -1},
		{"glob not matching", plan.Policies{DeniedTools: []string{"delete_*"}}, policy.Input{Tool: search}, policy.Allow, -1},

		// Roles.
		{"sre may run a destructive tool", plan.Policies{Approval: "allow", Rules: designRules}, policy.Input{Tool: restart, Caller: sre}, policy.Allow, -1},
		{"dev may not", plan.Policies{Approval: "allow", Rules: designRules}, policy.Input{Tool: restart, Caller: dev}, policy.Deny, 0},
		{"anonymous may not", plan.Policies{Approval: "allow", Rules: designRules}, policy.Input{Tool: restart, Caller: anonymous}, policy.Deny, 0},
		{"sre with approval ask still asks", plan.Policies{Approval: "ask", Rules: designRules}, policy.Input{Tool: restart, Caller: sre}, policy.Ask, -1},

		// Arguments.
		{"args over the limit ask", plan.Policies{Rules: designRules}, policy.Input{Tool: search, Caller: dev, Args: map[string]any{"limit": 500}}, policy.Ask, 1},
		{"args as JSON numbers", plan.Policies{Rules: designRules}, policy.Input{Tool: search, Caller: dev, Args: map[string]any{"limit": 100.5}}, policy.Ask, 1},
		{"args under the limit", plan.Policies{Rules: designRules}, policy.Input{Tool: search, Caller: dev, Args: map[string]any{"limit": 10}}, policy.Allow, -1},
		{"args on another server", plan.Policies{Rules: designRules},
			policy.Input{Tool: policy.Tool{Name: "q", Server: "warehouse", Kind: "sql"}, Args: map[string]any{"limit": 500}}, policy.Allow, -1},
		{"optional argument absent", plan.Policies{Rules: []plan.Rule{{When: `args.?limit.orValue(0) > 100`, Effect: "deny"}}}, policy.Input{Tool: search}, policy.Allow, -1},
		{"has() on an absent argument", plan.Policies{Rules: []plan.Rule{{When: `has(args.limit) && args.limit > 100`, Effect: "deny"}}}, policy.Input{Tool: search}, policy.Allow, -1},
		{"nested argument", plan.Policies{Rules: []plan.Rule{{When: `args.target.env == "prod"`, Effect: "ask"}}},
			policy.Input{Tool: restart, Caller: sre, Args: map[string]any{"target": map[string]any{"env": "prod"}}}, policy.Ask, 0},
		{"string functions on an argument", plan.Policies{Rules: []plan.Rule{{When: `string(args.sql).lowerAscii().contains("drop ")`, Effect: "deny"}}},
			policy.Input{Tool: policy.Tool{Name: "query", Kind: "sql"}, Args: map[string]any{"sql": "DROP TABLE x"}}, policy.Deny, 0},

		// Claims and the first match.
		{"claims", plan.Policies{Rules: []plan.Rule{{When: `"team" in caller.claims && caller.claims.team == "payments"`, Effect: "deny"}}},
			policy.Input{Tool: search, Caller: dev}, policy.Deny, 0},
		{"claims absent", plan.Policies{Rules: []plan.Rule{{When: `"team" in caller.claims && caller.claims.team == "payments"`, Effect: "deny"}}},
			policy.Input{Tool: search, Caller: anonymous}, policy.Allow, -1},
		{"first match wins", plan.Policies{Rules: []plan.Rule{
			{When: `tool.kind == "mcp"`, Effect: "allow"},
			{When: `true`, Effect: "deny"},
		}}, policy.Input{Tool: restart}, policy.Allow, 0},
		{"a later rule decides", plan.Policies{Rules: []plan.Rule{
			{When: `tool.kind == "sql"`, Effect: "allow"},
			{When: `tool.name == "search"`, Effect: "deny"},
		}}, policy.Input{Tool: search}, policy.Deny, 1},
		{"rule on tool hints", plan.Policies{Rules: []plan.Rule{{When: `!tool.read_only && !tool.idempotent`, Effect: "ask"}}},
			policy.Input{Tool: policy.Tool{Name: "append_note"}}, policy.Ask, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, tt.p)
			d := s.Decide(context.Background(), tt.in)
			if d.Effect != tt.want || d.Rule != tt.wantRule {
				t.Errorf("Decide = %v (rule %d, %q); want %v (rule %d)", d.Effect, d.Rule, d.Reason, tt.want, tt.wantRule)
			}
			if d.Cause != nil {
				t.Errorf("Cause = %v; want nil", d.Cause)
			}
			if d.Reason == "" {
				t.Error("Reason is empty")
			}
		})
	}
}

func TestDecideFailsClosed(t *testing.T) {
	const secret = "s3cr3t-value"
	tests := []struct {
		name     string
		rules    []plan.Rule
		in       policy.Input
		wantRule int
	}{
		{"missing argument", designRules, policy.Input{Tool: search, Caller: sre}, 1},
		{"missing argument with nil args", designRules, policy.Input{Tool: search, Caller: sre, Args: nil}, 1},
		{"argument of the wrong type", []plan.Rule{{When: `args.limit > 100`, Effect: "allow"}},
			policy.Input{Tool: search, Args: map[string]any{"limit": secret}}, 0},
		{"failed conversion quoting the value", []plan.Rule{{When: `int(args.n) > 1`, Effect: "allow"}},
			policy.Input{Tool: search, Args: map[string]any{"n": secret}}, 0},
		{"missing claim", []plan.Rule{{When: `caller.claims.team == "x"`, Effect: "allow"}}, policy.Input{Tool: search}, 0},
		{"regular expression built at run time", []plan.Rule{{When: `tool.name.matches(string(args.re))`, Effect: "allow"}},
			policy.Input{Tool: search, Args: map[string]any{"re": "[" + secret}}, 0},
		{"an allow rule after an error is not reached", []plan.Rule{
			{When: `args.limit > 1`, Effect: "deny"},
			{When: `true`, Effect: "allow"},
		}, policy.Input{Tool: search}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, plan.Policies{Approval: "allow", Rules: tt.rules})
			d := s.Decide(context.Background(), tt.in)
			if d.Effect != policy.Deny || d.Rule != tt.wantRule {
				t.Fatalf("Decide = %v (rule %d, %q); want deny (rule %d)", d.Effect, d.Rule, d.Reason, tt.wantRule)
			}
			if d.Cause == nil {
				t.Error("Cause = nil; want the evaluation error")
			}
			if want := fmt.Sprintf("policies.rules[%d]", tt.wantRule); !strings.Contains(d.Reason, want) {
				t.Errorf("Reason %q does not name %s", d.Reason, want)
			}
			if strings.Contains(d.Reason, secret) || strings.Contains(d.Err().Error(), secret) {
				t.Errorf("Reason or Err() quotes an argument value: %q / %q", d.Reason, d.Err())
			}
			if !diag.Has(d.Err(), diag.ToolDenied) {
				t.Errorf("Err() = %v; want %s", d.Err(), diag.ToolDenied)
			}
		})
	}
}

func TestDecideCostLimit(t *testing.T) {
	// Two nested comprehensions pass the compile-time estimate, which
	// assumes lists of up to 100 roles, but not the run-time budget on a
	// caller with thousands of them.
	s := mustNew(t, plan.Policies{Rules: []plan.Rule{
		{When: `caller.roles.exists(a, caller.roles.exists(b, a + b == "nope"))`, Effect: "allow"},
	}})
	roles := make([]string, 3000)
	for i := range roles {
		roles[i] = fmt.Sprint("role", i)
	}
	d := s.Decide(context.Background(), policy.Input{Tool: search, Caller: heddle.Identity{Roles: roles}})
	if d.Effect != policy.Deny || d.Rule != 0 || d.Cause == nil {
		t.Errorf("Decide = %v (rule %d, cause %v); want a fail-closed deny by rule 0", d.Effect, d.Rule, d.Cause)
	}
}

func TestDecideContextDone(t *testing.T) {
	s := mustNew(t, plan.Policies{Rules: []plan.Rule{
		{When: `caller.roles.exists(r, r == "nope")`, Effect: "allow"},
	}})
	roles := make([]string, 10*interruptEvery)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d := s.Decide(ctx, policy.Input{Tool: search, Caller: heddle.Identity{Roles: roles}})
	if d.Effect != policy.Deny || d.Rule != 0 || !errors.Is(d.Cause, context.Canceled) {
		t.Errorf("Decide = %v (rule %d, cause %v); want a deny caused by context.Canceled", d.Effect, d.Rule, d.Cause)
	}
}

func TestDecideNilSet(t *testing.T) {
	var s *policy.Set
	if d := s.Decide(context.Background(), policy.Input{Tool: restart}); d.Effect != policy.Ask {
		t.Errorf("destructive tool: %v; want ask", d.Effect)
	}
	if d := s.Decide(context.Background(), policy.Input{Tool: search}); d.Effect != policy.Allow {
		t.Errorf("read-only tool: %v; want allow", d.Effect)
	}
}

func TestCompileOnlyRules(t *testing.T) {
	s, ds := policy.Compile(designRules, "policies")
	if err := ds.Err(); err != nil {
		t.Fatal(err)
	}
	if d := s.Decide(context.Background(), policy.Input{Tool: restart, Caller: sre}); d.Effect != policy.Ask {
		t.Errorf("Compile's set: %v; want the default approval, ask", d.Effect)
	}
}

func TestDecisionErr(t *testing.T) {
	tests := []struct {
		effect policy.Effect
		want   diag.Code
	}{{policy.Allow, ""}, {policy.Ask, diag.ToolApprovalRequired}, {policy.Deny, diag.ToolDenied}, {policy.Effect(42), diag.ToolDenied}}
	for _, tt := range tests {
		t.Run(tt.effect.String(), func(t *testing.T) {
			err := policy.Decision{Effect: tt.effect, Rule: -1, Reason: "why"}.Err()
			if got := diag.CodeOf(err); got != tt.want {
				t.Errorf("code = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestEffect(t *testing.T) {
	for _, e := range []policy.Effect{policy.Deny, policy.Ask, policy.Allow} {
		got, ok := policy.ParseEffect(e.String())
		if !ok || got != e {
			t.Errorf("ParseEffect(%q) = %v, %v", e.String(), got, ok)
		}
		if b, err := e.MarshalText(); err != nil || string(b) != e.String() {
			t.Errorf("MarshalText(%v) = %q, %v", e, b, err)
		}
	}
	if _, err := policy.Effect(7).MarshalText(); err == nil {
		t.Error("MarshalText of an invalid effect: no error")
	}
	var zero policy.Decision
	if zero.Effect != policy.Deny {
		t.Error("the zero policy.Decision must deny")
	}
}

// TestDecideConcurrent shares one policy.Set between goroutines; run with -race.
func TestDecideConcurrent(t *testing.T) {
	s := mustNew(t, plan.Policies{Approval: "ask", DeniedTools: []string{"delete_*"}, Rules: designRules})
	ctx := context.Background()
	cases := []struct {
		in   policy.Input
		want policy.Effect
	}{
		{policy.Input{Tool: restart, Caller: sre}, policy.Ask},
		{policy.Input{Tool: restart, Caller: dev}, policy.Deny},
		{policy.Input{Tool: search, Caller: dev, Args: map[string]any{"limit": 500}}, policy.Ask},
		{policy.Input{Tool: search, Caller: dev, Args: map[string]any{"limit": 5}}, policy.Allow},
		{policy.Input{Tool: search, Caller: dev}, policy.Deny}, // fails closed
		{policy.Input{Tool: deleteUser, Caller: sre}, policy.Deny},
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				c := cases[(g+i)%len(cases)]
				if d := s.Decide(ctx, c.in); d.Effect != c.want {
					t.Errorf("Decide(%s as %s) = %v; want %v", c.in.Tool.Name, c.in.Caller.Subject, d.Effect, c.want)
					return
				}
			}
		})
	}
	wg.Wait()
}
