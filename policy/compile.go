package policy

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode"

	"cel.dev/cel-go/cel"

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
	prg        cel.Program
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
// the default approval (ask). Each rule is checked against the CEL
// environment the package documents, and every problem is reported: a
// syntax or type error, a result that is not bool, an unknown effect, an
// empty rule or one too expensive to run, each as [diag.PolicyInvalid] at
// basePath.rules[i].when or basePath.rules[i].effect. Summaries carry CEL's
// own message with its line and column within the rule text.
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
		prg, whenDS := compileWhen(r.When, setting.Join(at, "when"))
		ds = append(ds, whenDS...)
		if ok && prg != nil {
			out = append(out, rule{effect: effect, prg: prg, reason: ruleReason(effect, at),
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

// whenDetail lists what a rule may refer to, for diagnostics about its text.
const whenDetail = "rules see tool{name, original_name, server, kind, destructive, read_only, idempotent, classified_by}, " +
	"caller{subject, roles, claims} and args (the call's arguments; use has(args.x) or args.?x.orValue(d) " +
	"for arguments that may be absent)"

// compileWhen parses, checks and plans one rule's expression. Diagnostics
// carry only CEL's messages about the rule text, located within it.
func compileWhen(src, at string) (cel.Program, diag.Diagnostics) {
	if strings.TrimSpace(src) == "" {
		return nil, diag.Diagnostics{diag.Errorf(diag.PolicyInvalid, at, "rule is empty").
			WithDetail("write a CEL condition, e.g. tool.destructive && !(\"sre\" in caller.roles)")}
	}
	env := celEnv()
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		var ds diag.Diagnostics
		for _, e := range iss.Errors() {
			msg := oneLine(e.Message)
			// CEL's columns are 0-based; editors' are 1-based. Errors about
			// the whole rule (its length, its nesting) have no location.
			if l := e.Location; l != nil && l.Line() > 0 {
				msg = fmt.Sprintf("%s (at %d:%d)", msg, l.Line(), l.Column()+1)
			}
			ds = append(ds, diag.Errorf(diag.PolicyInvalid, at, "%s", msg).WithDetail(whenDetail))
		}
		return nil, ds
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) {
		return nil, diag.Diagnostics{diag.Errorf(diag.PolicyInvalid, at,
			"rule must evaluate to bool, not %s", t).
			WithDetail("compare the value instead, e.g. args.dry_run == true")}
	}
	est, err := env.EstimateCost(ast, estimator{})
	if err != nil {
		return nil, diag.Diagnostics{diag.Errorf(diag.PolicyInvalid, at, "rule cost cannot be estimated")}
	}
	if est.Max > costLimit {
		return nil, diag.Diagnostics{diag.Errorf(diag.PolicyInvalid, at,
			"rule is too expensive: worst-case cost %s exceeds %d", costString(est.Max), costLimit).
			WithDetail("the estimate assumes lists, maps and strings of up to %d elements; "+
				"avoid comprehensions nested inside comprehensions", sizeHint)}
	}
	prg, err := env.Program(ast, programOptions...)
	if err != nil {
		// Planning fails on rule text the checker let through, such as a
		// malformed regular expression in a constant that is built up.
		return nil, diag.Diagnostics{diag.Errorf(diag.PolicyInvalid, at, "%s", oneLine(err.Error()))}
	}
	return prg, nil
}

func costString(c uint64) string {
	if c == ^uint64(0) {
		return "unbounded"
	}
	return fmt.Sprint(c)
}

// oneLine escapes control characters, so that a message quoting part of a
// multi-line rule stays on one line.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
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
