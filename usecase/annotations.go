package usecase

// Annotations are what an operation's options say about its effects. The
// usecase kind offers them to the model as the tool's MCP annotations
// (readOnlyHint, destructiveHint, idempotentHint), and the runtime's
// approval and policies read them from there.
type Annotations struct {
	// ReadOnly is set by ReadOnly: the operation changes nothing.
	ReadOnly bool
	// Destructive is true when set by Destructive and false when set by
	// Additive. Nil means neither was said, which MCP takes as possibly
	// destructive: a hint that is absent is not a hint that is false.
	Destructive *bool
	// Idempotent is set by Idempotent: repeating the operation with the same
	// arguments has no further effect.
	Idempotent bool
}
