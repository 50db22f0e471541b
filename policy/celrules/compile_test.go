package celrules

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/policy"
)

// coded is what tests compare: a diagnostic's code and path, never its words.
type coded struct {
	Code diag.Code
	Path string
}

func codesOf(ds diag.Diagnostics) []coded {
	var out []coded
	for _, d := range ds {
		out = append(out, coded{d.Code, d.Path})
	}
	return out
}

func invalid(paths ...string) []coded {
	var out []coded
	for _, p := range paths {
		out = append(out, coded{diag.PolicyInvalid, p})
	}
	return out
}

func TestCompile(t *testing.T) {
	tests := []struct {
		name  string
		rules []plan.Rule
		want  []coded
	}{
		{
			name: "valid rules",
			rules: []plan.Rule{
				{When: `tool.destructive && !("sre" in caller.roles)`, Effect: "deny"},
				{When: `tool.server == "runbooks" && args.limit > 100`, Effect: "ask"},
				{When: `caller.claims["team"] == "payments" || caller.subject.startsWith("svc-")`, Effect: "allow"},
				{When: `tool.kind == "sql" && tool.read_only && tool.idempotent && tool.original_name != tool.name`, Effect: "allow"},
				{When: `args.?limit.orValue(0) > 10 && has(args.query) && string(args.query).lowerAscii().contains("drop")`, Effect: "deny"},
				{When: "tool.name.matches('^delete_')\n  && caller.roles.exists(r, r == 'admin')", Effect: "ask"},
			},
		},
		{name: "no rules"},
		{
			name:  "typo in a caller field",
			rules: []plan.Rule{{When: `tool.destructive && !("sre" in caller.rolez)`, Effect: "deny"}},
			want:  invalid("policies.rules[0].when"),
		},
		{
			name:  "typo in a tool field",
			rules: []plan.Rule{{When: `tool.destructiv`, Effect: "deny"}},
			want:  invalid("policies.rules[0].when"),
		},
		{
			name:  "undeclared variable",
			rules: []plan.Rule{{When: `toool.destructive`, Effect: "deny"}},
			want:  invalid("policies.rules[0].when"),
		},
		{
			name:  "type mismatch",
			rules: []plan.Rule{{When: `tool.name == 1`, Effect: "deny"}},
			want:  invalid("policies.rules[0].when"),
		},
		{
			name:  "syntax error",
			rules: []plan.Rule{{When: `tool.name == "x" &&`, Effect: "deny"}},
			want:  invalid("policies.rules[0].when"),
		},
		{
			name:  "string result",
			rules: []plan.Rule{{When: `tool.name`, Effect: "deny"}},
			want:  invalid("policies.rules[0].when"),
		},
		{
			name:  "dyn result",
			rules: []plan.Rule{{When: `args.dry_run`, Effect: "allow"}},
			want:  invalid("policies.rules[0].when"),
		},
		{
			name:  "empty when",
			rules: []plan.Rule{{When: " \n", Effect: "deny"}},
			want:  invalid("policies.rules[0].when"),
		},
		{
			name:  "bad effect",
			rules: []plan.Rule{{When: `true`, Effect: "block"}},
			want:  invalid("policies.rules[0].effect"),
		},
		{
			name:  "effect in capitals",
			rules: []plan.Rule{{When: `true`, Effect: "Deny"}},
			want:  invalid("policies.rules[0].effect"),
		},
		{
			name:  "missing effect",
			rules: []plan.Rule{{When: `true`}},
			want:  invalid("policies.rules[0].effect"),
		},
		{
			name:  "malformed regular expression",
			rules: []plan.Rule{{When: `tool.name.matches("[")`, Effect: "deny"}},
			want:  invalid("policies.rules[0].when"),
		},
		{
			name:  "too expensive",
			rules: []plan.Rule{{When: `caller.roles.exists(a, caller.roles.exists(b, caller.roles.exists(c, a + b == c)))`, Effect: "deny"}},
			want:  invalid("policies.rules[0].when"),
		},
		{
			name:  "too long",
			rules: []plan.Rule{{When: strings.Repeat("true && ", maxRuleLength/8) + "true", Effect: "deny"}},
			want:  invalid("policies.rules[0].when"),
		},
		{
			name: "every problem in one call",
			rules: []plan.Rule{
				{When: `caller.rolez`, Effect: "deny"},
				{When: `true`, Effect: "allow"},
				{When: `tool.name`, Effect: "nope"},
				{When: "", Effect: "ask"},
			},
			want: invalid(
				"policies.rules[0].when",
				"policies.rules[2].effect",
				"policies.rules[2].when",
				"policies.rules[3].when",
			),
		},
		{
			name:  "two errors in one rule",
			rules: []plan.Rule{{When: "tool.name == 1 &&\n  toool.x", Effect: "deny"}},
			want:  invalid("policies.rules[0].when", "policies.rules[0].when"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, ds := policy.Compile(tt.rules, "policies")
			if diff := cmp.Diff(tt.want, codesOf(ds)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s\n%v", diff, ds)
			}
			if (set == nil) != ds.HasErrors() {
				t.Errorf("set = %p with errors = %v; want a set exactly when there are no errors", set, ds.HasErrors())
			}
		})
	}
}

// TestCompileLocation checks that a rule's errors are located within the
// rule text, where CEL puts them, and carry nothing but CEL's message.
func TestCompileLocation(t *testing.T) {
	_, ds := policy.Compile([]plan.Rule{{When: "tool.name == \"x\" &&\n  caller.rolez", Effect: "deny"}}, "policies")
	if len(ds) != 1 {
		t.Fatalf("got %d diagnostics, want 1: %v", len(ds), ds)
	}
	if s := ds[0].Summary; !strings.Contains(s, "(at 2:9)") || strings.Contains(s, "\n") || strings.Contains(s, "<input>") {
		t.Errorf("summary %q: want one line located at 2:9 within the rule", s)
	}
}

func TestCompilePaths(t *testing.T) {
	_, ds := policy.Compile([]plan.Rule{{When: `true`, Effect: "x"}}, "agents.triage.policies")
	want := invalid("agents.triage.policies.rules[0].effect")
	if diff := cmp.Diff(want, codesOf(ds)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		p    plan.Policies
		want []coded
	}{
		{
			name: "the design example",
			p: plan.Policies{
				ToolTimeoutMS: 25000,
				Approval:      "ask",
				DeniedTools:   []string{"delete_*", "drop_[a-z]*"},
				Rules: []plan.Rule{
					{When: `tool.destructive && !("sre" in caller.roles)`, Effect: "deny"},
					{When: `tool.server == "runbooks" && args.limit > 100`, Effect: "ask"},
				},
			},
		},
		{name: "zero value"},
		{name: "approval allow", p: plan.Policies{Approval: "allow"}},
		{name: "approval deny", p: plan.Policies{Approval: "deny"}},
		{name: "bad approval", p: plan.Policies{Approval: "maybe"}, want: invalid("policies.approval")},
		{
			name: "bad globs",
			p:    plan.Policies{DeniedTools: []string{"ok_*", "a[", "", `x\`}},
			want: invalid("policies.denied_tools[1]", "policies.denied_tools[2]", "policies.denied_tools[3]"),
		},
		{
			name: "everything wrong at once",
			p: plan.Policies{
				Approval:    "ASK",
				DeniedTools: []string{"["},
				Rules:       []plan.Rule{{When: `caller.rolez`, Effect: "deny"}, {When: `true`, Effect: "permit"}},
			},
			want: invalid("policies.approval", "policies.denied_tools[0]", "policies.rules[0].when", "policies.rules[1].effect"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, ds := policy.New(tt.p, "policies")
			if diff := cmp.Diff(tt.want, codesOf(ds)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s\n%v", diff, ds)
			}
			if (set == nil) != ds.HasErrors() {
				t.Errorf("set = %p with errors = %v; want a set exactly when there are no errors", set, ds.HasErrors())
			}
		})
	}
}

func TestCompileApproval(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []coded
	}{
		{"ask", nil}, {"allow", nil}, {"deny", nil}, {"", nil},
		{"Ask", invalid("p.approval")}, {"yes", invalid("p.approval")},
	} {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, codesOf(policy.CompileApproval(tt.in, "p.approval"))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
