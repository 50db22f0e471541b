package policy

import (
	"context"
	"fmt"
	"path"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
)

// Decision is the outcome of [Set.Decide] for one call.
type Decision struct {
	// Effect is what to do with the call.
	Effect Effect
	// Rule is the index in policies.rules of the rule that decided, or -1
	// when no rule did (a denied_tools glob, or the default).
	Rule int
	// Reason says why in one line that is safe to show to the model and to
	// log: it names settings, rules and the tool, never argument values.
	Reason string
	// Cause is the evaluation error behind a fail-closed deny, and nil
	// otherwise. Its text may quote argument values: keep it for debug logs.
	Cause error
}

// Err returns nil for [Allow], and otherwise the refusal as a coded error:
// [diag.ToolDenied] for [Deny], [diag.ToolApprovalRequired] for [Ask]. Its
// message is the Reason; Cause is kept for errors.Unwrap and left out of
// the message.
func (d Decision) Err() error {
	switch d.Effect {
	case Allow:
		return nil
	case Ask:
		return diag.Wrap(diag.ToolApprovalRequired, d.Cause, "%s", d.Reason)
	}
	return diag.Wrap(diag.ToolDenied, d.Cause, "%s", d.Reason)
}

// Decide says whether the call described by in may go ahead. In order:
//
//  1. a tool whose name or original name matches a denied_tools glob is denied;
//  2. the first rule whose condition is true decides, with its effect;
//  3. otherwise a destructive tool gets the approval setting, and any other
//     tool is allowed.
//
// A rule that cannot be evaluated (an absent argument, a conversion that
// fails, the cost limit, ctx ending during a long comprehension) denies the
// call: policies fail closed. Decide is safe for concurrent use.
func (s *Set) Decide(ctx context.Context, in Input) Decision {
	if s == nil {
		s = defaultSet
	}
	for _, g := range s.denied {
		if ToolMatches(g.glob, in.Tool.Name, in.Tool.OriginalName) {
			return Decision{Effect: Deny, Rule: -1,
				Reason: fmt.Sprintf("tool %q matches %s (%q)", in.Tool.Name, g.path, g.glob)}
		}
	}
	for i, r := range s.rules {
		ok, err := r.cond.Match(ctx, in)
		if err != nil {
			return Decision{Effect: Deny, Rule: i, Reason: r.failReason, Cause: err}
		}
		if ok {
			return Decision{Effect: r.effect, Rule: i, Reason: r.reason}
		}
	}
	if in.Tool.Destructive {
		return Decision{Effect: s.approval, Rule: -1, Reason: s.approvalReason}
	}
	return Decision{Effect: Allow, Rule: -1, Reason: "no rule matched"}
}

// Listed reports whether tool may be listed to caller: false when every
// call of it by caller is denied, whatever its arguments — a denied_tools
// glob matches it; or the rules, evaluated with the arguments unknown,
// deny: the first rule that matches every call denies, or no rule can
// match a call without denying it and the default for the tool is deny
// (a destructive tool under approval: deny). A rule whose outcome depends
// on the arguments keeps the tool listed unless its effect is deny, and
// so does a rule that cannot be evaluated without them: a tool is hidden
// only when no call of it by this caller can be allowed or asked for.
//
// The runtime leaves such a tool out of what the caller is listed and
// refuses its calls as if it did not exist (TOOL_UNKNOWN): a caller cannot
// learn from the lists what others may use.
func (s *Set) Listed(ctx context.Context, tool Tool, caller heddle.Identity) bool {
	if s == nil {
		s = defaultSet
	}
	for _, g := range s.denied {
		if ToolMatches(g.glob, tool.Name, tool.OriginalName) {
			return false
		}
	}
	in := Input{Tool: tool, Caller: caller}
	for _, r := range s.rules {
		reach := ReachSome
		if pc, ok := r.cond.(PartialCondition); ok {
			reach = pc.Reach(ctx, in)
		}
		switch {
		case reach == ReachAll:
			return r.effect != Deny
		case reach == ReachSome && r.effect != Deny:
			return true // some arguments get past this rule undenied
		}
		// ReachNone, or a deny for some arguments: the others go on.
	}
	if tool.Destructive {
		return s.approval != Deny
	}
	return true
}

// defaultSet is what a nil *Set decides with.
var defaultSet = newSet(Ask, "policies.approval", nil)

// ToolMatches reports whether a tool-name glob (path.Match syntax, as
// denied_tools and policies.limits[].tools write them, checked by
// CompileDeniedTools) matches a tool by its model-facing name or its name
// at its source. An empty name matches nothing.
func ToolMatches(glob, name, originalName string) bool {
	return globMatch(glob, name) || globMatch(glob, originalName)
}

func globMatch(glob, name string) bool {
	if name == "" {
		return false
	}
	ok, _ := path.Match(glob, name)
	return ok
}
