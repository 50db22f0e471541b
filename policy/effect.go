package policy

import (
	"fmt"

	"github.com/heddlehq/heddle/config/setting"
)

// Effect is what a policy decides for one call: deny it, ask a human to
// approve it, or allow it.
//
// The zero value is [Deny], so a Decision that was never filled in refuses
// the call rather than letting it through.
type Effect int

const (
	// Deny refuses the call; the runtime answers TOOL_DENIED.
	Deny Effect = iota
	// Ask holds the call until a human approves it; without an approver the
	// runtime answers TOOL_APPROVAL_REQUIRED.
	Ask
	// Allow lets the call through.
	Allow
)

// String returns "deny", "ask" or "allow", the words agent.yaml uses.
func (e Effect) String() string {
	switch e {
	case Deny:
		return setting.ApprovalDeny
	case Ask:
		return setting.ApprovalAsk
	case Allow:
		return setting.ApprovalAllow
	}
	return fmt.Sprintf("Effect(%d)", int(e))
}

// MarshalText encodes the effect as its agent.yaml word.
func (e Effect) MarshalText() ([]byte, error) {
	switch e {
	case Deny, Ask, Allow:
		return []byte(e.String()), nil
	}
	return nil, fmt.Errorf("policy: invalid effect %d", int(e))
}

// ParseEffect reads an agent.yaml word: "deny", "ask" or "allow". Matching is
// exact, as the rest of agent.yaml is.
func ParseEffect(s string) (Effect, bool) {
	switch s {
	case setting.ApprovalDeny:
		return Deny, true
	case setting.ApprovalAsk:
		return Ask, true
	case setting.ApprovalAllow:
		return Allow, true
	}
	return Deny, false
}
