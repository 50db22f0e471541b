package celrules

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"cel.dev/cel-go/common/types"

	"cel.dev/cel-go/cel"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/policy"
)

// whenDetail lists what a rule may refer to, for diagnostics about its text.
const whenDetail = "rules see tool{name, original_name, server, kind, destructive, read_only, idempotent, classified_by}, " +
	"caller{subject, roles, claims} and args (the call's arguments; use has(args.x) or args.?x.orValue(d) " +
	"for arguments that may be absent)"

// compileWhen parses, checks and plans one rule's expression: the
// policy.Language this package registers. Each rule is checked against the
// CEL environment package policy documents, and every problem is reported:
// a syntax or type error, a result that is not bool, an empty rule or one
// too expensive to run, each as diag.PolicyInvalid at the rule's when.
// Diagnostics carry only CEL's messages about the rule text, located within
// it, with its line and column.
func compileWhen(src, at string) (policy.Condition, diag.Diagnostics) {
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
	return &condition{prg: prg, partial: sync.OnceValue(func() cel.Program {
		// Planned on first use: only lists ask, and most rules are never
		// asked about with their arguments unknown.
		p, err := env.Program(ast, partialOptions...)
		if err != nil {
			return nil
		}
		return p
	})}, nil
}

// activations are reused across evaluations: CEL keeps none past
// ContextEval, and a call that evaluates several rules makes none.
var activations = sync.Pool{New: func() any { return new(activation) }}

// condition is a rule's planned CEL program, and the program that
// evaluates it with the arguments unknown.
type condition struct {
	prg     cel.Program
	partial func() cel.Program
}

// unknownArgs marks args unknown in a partial evaluation.
var unknownArgs = []*cel.AttributePatternType{cel.AttributePattern("args")}

// Reach evaluates the rule with the arguments unknown: CEL's partial
// evaluation answers true or false when the arguments cannot change the
// outcome (tool.destructive && !("sre" in caller.roles)), and an unknown
// when they can (args.limit > 100, has(args.x)). A failure is ReachSome.
func (c *condition) Reach(ctx context.Context, in policy.Input) policy.Reach {
	prg := c.partial()
	if prg == nil {
		return policy.ReachSome
	}
	act := activations.Get().(*activation)
	act.in = policy.Input{Tool: in.Tool, Caller: in.Caller, Args: emptyArgs}
	defer func() {
		act.in = policy.Input{}
		activations.Put(act)
	}()
	vars, err := cel.PartialVars(act, unknownArgs...)
	if err != nil {
		return policy.ReachSome
	}
	out, _, err := prg.ContextEval(ctx, vars)
	if err != nil {
		return policy.ReachSome
	}
	switch b, ok := out.(types.Bool); {
	case !ok:
		return policy.ReachSome // unknown: the arguments decide
	case bool(b):
		return policy.ReachAll
	}
	return policy.ReachNone
}

// Match evaluates the rule on in, with its three variables and no map built
// per evaluation.
func (c *condition) Match(ctx context.Context, in policy.Input) (bool, error) {
	act := activations.Get().(*activation)
	act.in = in
	if act.in.Args == nil {
		act.in.Args = emptyArgs
	}
	out, _, err := c.prg.ContextEval(ctx, act)
	act.in = policy.Input{} // holds nothing of the call while pooled
	activations.Put(act)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, errors.New("rule did not evaluate to bool")
	}
	return bool(b), nil
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
