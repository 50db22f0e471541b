package policy

import (
	"context"
	"sync"

	"github.com/heddlehq/heddle/diag"
)

// Condition is one rule's compiled `when`: whether a call matches it. An
// error (an absent argument, a conversion that fails, a cost limit, ctx
// ending) denies the call: policies fail closed. Match is called
// concurrently and must not change in.
type Condition interface {
	Match(ctx context.Context, in Input) (bool, error)
}

// Reach is how many of a tool's calls by one caller a rule matches when
// the calls' arguments are not known: what [Set.Listed] decides on.
type Reach int

const (
	// ReachNone: the rule matches no call, whatever its arguments.
	ReachNone Reach = iota
	// ReachAll: the rule matches every call, whatever its arguments.
	ReachAll
	// ReachSome: it depends on the arguments, or cannot be told without
	// them.
	ReachSome
)

// PartialCondition is a Condition that can also be evaluated with the
// call's arguments unknown (CEL's partial evaluation, for policy/celrules).
// A Condition that is not one is taken to depend on the arguments, which
// keeps every tool listed.
type PartialCondition interface {
	Condition
	// Reach evaluates the rule on in.Tool and in.Caller with the
	// arguments unknown; in.Args is ignored. An evaluation that fails is
	// ReachSome.
	Reach(ctx context.Context, in Input) Reach
}

// Language compiles the text of a rule's `when`, at the config path at, into
// a Condition, reporting every problem with the text as
// [diag.PolicyInvalid] at that path, and a nil Condition when any is an
// error.
type Language func(src, at string) (Condition, diag.Diagnostics)

var (
	languageMu sync.RWMutex
	language   Language
)

// RegisterLanguage makes l the language of rules' conditions, as a database
// driver registers itself with database/sql: package policy/celrules (CEL)
// registers itself when it is linked, which package builtin and the
// compiler do. It panics when called twice.
func RegisterLanguage(l Language) {
	languageMu.Lock()
	defer languageMu.Unlock()
	if language != nil {
		panic("policy: RegisterLanguage called twice")
	}
	language = l
}

// compileWhen compiles one rule's condition with the registered language.
// A program that links none refuses every rule, saying how to link one:
// an agent's rules are never ignored.
func compileWhen(src, at string) (Condition, diag.Diagnostics) {
	languageMu.RLock()
	l := language
	languageMu.RUnlock()
	if l == nil {
		return nil, diag.Diagnostics{diag.Errorf(diag.PolicyInvalid, at, "this program links no language for rules").
			WithDetail(`import _ "github.com/heddlehq/heddle/policy/celrules" (package builtin does)`)}
	}
	return l(src, at)
}
