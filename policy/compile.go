package policy

import (
	"fmt"
	"path"

	"github.com/heddlehq/heddle/config/setting"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
)

// Set is an agent's compiled policies: its denied_tools globs, its CEL rules
// and its approval setting. Build one with [New] (or [Compile] for rules
// alone) and ask it about each call with [Set.Decide].
//
// A Set never changes once built and is safe for concurrent use by any
// number of goroutines. A nil *Set applies the defaults of an empty policies
// block: destructive tools ask for approval, other tools are allowed.
type Set struct {
	approval       Effect
	approvalReason string
	denied         []deniedGlob
	rules          []rule
}

type deniedGlob struct {
	glob string
	path string
}

type rule struct {
	effect     Effect
	cond       Condition
	reason     string // when the rule matches
	failReason string // when it cannot be evaluated
}

// newSet builds a Set; reasons are made once here rather than per call.
func newSet(approval Effect, approvalAt string, rules []rule) *Set {
	return &Set{
		approval:       approval,
		approvalReason: fmt.Sprintf("destructive tool; %s is %s", approvalAt, approval),
		rules:          rules,
	}
}

// New compiles an agent's policies block: approval, denied_tools and rules,
// with paths under basePath (usually "policies"). It reports every problem
// it finds as a [diag.PolicyInvalid] diagnostic, and returns a nil Set when
// any is an error, never a partial one. ToolTimeoutMS is the supervisor's and
// is not read here.
func New(p plan.Policies, basePath string) (*Set, diag.Diagnostics) {
	approvalAt := setting.Join(basePath, "approval")
	ds := CompileApproval(p.Approval, approvalAt)
	ds = append(ds, CompileDeniedTools(p.DeniedTools, setting.Join(basePath, "denied_tools"))...)
	rules, rds := compileRules(p.Rules, basePath)
	ds = append(ds, rds...)
	if ds.HasErrors() {
		return nil, ds
	}
	approval, _ := parseApproval(p.Approval)
	s := newSet(approval, approvalAt, rules)
	for i, g := range p.DeniedTools {
		s.denied = append(s.denied, deniedGlob{glob: g, path: setting.Item(setting.Join(basePath, "denied_tools"), i)})
	}
	return s, ds
}

// Compile compiles rules alone; the Set it returns has no denied_tools and
// the default approval (ask). Each rule's condition is compiled by the rule
// language the program links (package policy/celrules: CEL), and every
// problem is reported: an unknown effect at basePath.rules[i].effect, and
// whatever the language finds in the text at basePath.rules[i].when, each
// as [diag.PolicyInvalid].
func Compile(rules []plan.Rule, basePath string) (*Set, diag.Diagnostics) {
	compiled, ds := compileRules(rules, basePath)
	if ds.HasErrors() {
		return nil, ds
	}
	return newSet(Ask, setting.Join(basePath, "approval"), compiled), ds
}

// CompileApproval checks a policies.approval value at path: ask, allow or
// deny. The empty string is accepted as the default, ask.
func CompileApproval(approval string, path string) diag.Diagnostics {
	if _, ok := parseApproval(approval); ok {
		return nil
	}
	return diag.Diagnostics{diag.Errorf(diag.PolicyInvalid, path,
		"approval must be ask, allow or deny").
		WithDetail("approval says what happens to destructive tools that no rule decides")}
}

func parseApproval(s string) (Effect, bool) {
	if s == "" {
		return Ask, true
	}
	return ParseEffect(s)
}

// CompileDeniedTools checks denied_tools globs (path.Match syntax) listed at
// path, reporting each malformed or empty one at path[i].
func CompileDeniedTools(globs []string, at string) diag.Diagnostics {
	var ds diag.Diagnostics
	for i, g := range globs {
		p := setting.Item(at, i)
		if g == "" {
			ds = append(ds, diag.Errorf(diag.PolicyInvalid, p, "empty pattern matches no tool").
				WithDetail("write a tool name or a glob such as delete_*"))
			continue
		}
		if _, err := path.Match(g, ""); err != nil {
			ds = append(ds, diag.Errorf(diag.PolicyInvalid, p, "malformed glob %q", g).
				WithDetail("globs use * for any run of characters, ? for one, [a-z] for a class; \\ escapes"))
		}
	}
	return ds
}

// compileRules compiles every rule, gathering every problem.
func compileRules(rules []plan.Rule, basePath string) ([]rule, diag.Diagnostics) {
	var ds diag.Diagnostics
	out := make([]rule, 0, len(rules))
	base := setting.Join(basePath, "rules")
	for i, r := range rules {
		at := setting.Item(base, i)
		effect, ok := ParseEffect(r.Effect)
		if !ok {
			ds = append(ds, badEffect(setting.Join(at, "effect"), r.Effect))
		}
		cond, whenDS := compileWhen(r.When, setting.Join(at, "when"))
		ds = append(ds, whenDS...)
		if ok && cond != nil {
			out = append(out, rule{effect: effect, cond: cond, reason: ruleReason(effect, at),
				failReason: at + " could not be evaluated, so the call is denied"})
		}
	}
	return out, ds
}

func badEffect(at, effect string) diag.Diagnostic {
	if effect == "" {
		return diag.Errorf(diag.PolicyInvalid, at, "effect is required").
			WithDetail("set effect to deny, ask or allow")
	}
	return diag.Errorf(diag.PolicyInvalid, at, "effect must be deny, ask or allow")
}

func ruleReason(effect Effect, at string) string {
	switch effect {
	case Allow:
		return "allowed by " + at
	case Ask:
		return at + " requires approval"
	}
	return "denied by " + at
}
