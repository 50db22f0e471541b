package runtime

// WithApprover decides this call's approval with a, in place of
// Options.Approver: a front door that can ask its own caller (the MCP
// facade asks the host's user by elicitation) approves each call through
// that caller. a is called only when policy says the call needs approval;
// a nil a is no approver, and the call is refused TOOL_APPROVAL_REQUIRED.
func WithApprover(a Approver) CallOption {
	return func(c *callConfig) { c.approver, c.approverSet = a, true }
}

// approver is the approver of a call: its own, or the runtime's.
func (t *Toolset) approver(cc *callConfig) Approver {
	if cc.approverSet {
		return cc.approver
	}
	return t.rt.opts.Approver
}
