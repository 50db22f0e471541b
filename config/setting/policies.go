package setting

// Values of policies.limits[i].by: what a limit is counted for.
const (
	LimitByCaller = "caller"
	LimitByAgent  = "agent" // the default
	LimitByTool   = "tool"
)

// Values of policies.approval: what happens to a destructive tool's call
// that no rule decides. They are also the effects a rule may have.
const (
	ApprovalAsk   = "ask" // the default: held for a human's approval
	ApprovalAllow = "allow"
	ApprovalDeny  = "deny"
)
