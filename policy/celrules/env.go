package celrules

import (
	"reflect"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/policy"
)

// Limits on rules. They are constants rather than settings: a rule that needs
// more is a rule to rewrite.
const (
	// costLimit bounds one rule's evaluation at run time, in CEL cost units
	// (roughly one per operation, one per ten characters scanned). Past it
	// the evaluation stops and the call is denied.
	costLimit = 1_000_000
	// sizeHint is the length assumed for every list, map and string in the
	// input when a rule's worst-case cost is estimated at compile time. A
	// rule whose estimate exceeds costLimit is refused, which in practice
	// refuses comprehensions nested three deep.
	sizeHint = 100
	// interruptEvery is how many comprehension iterations pass between
	// checks of the context.
	interruptEvery = 100
	// maxRuleLength bounds a rule's text, in code points.
	maxRuleLength = 8192
)

// celEnv is the one environment every rule is checked in. Building it costs
// far more than checking a rule, and a cel.Env is safe for concurrent use.
var celEnv = sync.OnceValue(func() *cel.Env {
	toolT, callerT := reflect.TypeFor[policy.Tool](), reflect.TypeFor[heddle.Identity]()
	env, err := cel.NewEnv(
		// Native types give field-level checking: caller.rolez is a
		// compile error, not a runtime "no such key".
		ext.NativeTypes(toolT, callerT, ext.ParseStructTags(true)),
		cel.Variable("tool", cel.ObjectType(toolT.String())),
		cel.Variable("caller", cel.ObjectType(callerT.String())),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		ext.Strings(),
		// args.?limit.orValue(0) reads an argument that may be absent
		// without an evaluation error.
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		cel.ParserExpressionSizeLimit(maxRuleLength),
		cel.ASTValidators(
			cel.ValidateRegexLiterals(),
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
		),
	)
	if err != nil {
		// The environment is fixed at build time; this is a programming
		// error that every test would show.
		panic("celrules: building the CEL environment: " + err.Error())
	}
	return env
})

// programOptions are the options every rule's program is built with.
var programOptions = []cel.ProgramOption{
	cel.EvalOptions(cel.OptOptimize),
	cel.CostLimit(costLimit),
	cel.InterruptCheckFrequency(interruptEvery),
}

// partialOptions are those of a rule's program that evaluates it with the
// arguments unknown (condition.Reach).
var partialOptions = []cel.ProgramOption{
	cel.EvalOptions(cel.OptOptimize, cel.OptPartialEval),
	cel.CostLimit(costLimit),
	cel.InterruptCheckFrequency(interruptEvery),
}

// estimator assumes every list, map and string is at most sizeHint long, so
// that a comprehension has a finite worst-case cost.
type estimator struct{}

func (estimator) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

func (estimator) EstimateSize(cost.AstNode) *cost.SizeEstimate {
	return &cost.SizeEstimate{Min: 0, Max: sizeHint}
}

// emptyArgs stands in for nil Input.Args. CEL never writes to it.
var emptyArgs = map[string]any{}

// activation hands a rule its three variables without building a map per
// evaluation. It holds a copy of the Input so that Decide's argument stays
// on the stack when there are no rules to run.
type activation struct {
	in policy.Input
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "tool":
		return &a.in.Tool, true
	case "caller":
		return &a.in.Caller, true
	case "args":
		return a.in.Args, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

var _ interpreter.Activation = (*activation)(nil)
