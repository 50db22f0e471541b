package policy

import "github.com/heddlehq/heddle"

// Tool describes the tool being called, as rules see it through the CEL
// variable `tool`. The cel tags are the field names rules use.
type Tool struct {
	// Name is the model-facing name, unique within the agent's toolset
	// (for example "runbooks__search" when two servers share "search").
	Name string `cel:"name"`
	// OriginalName is the name the source advertises ("search").
	OriginalName string `cel:"original_name"`
	// Server is the MCP server, SQL source or A2A agent the tool comes from,
	// and "usecase" for the application's own operations.
	Server string `cel:"server"`
	// Kind is the grant kind that gave the agent this tool: "mcp",
	// "usecase", "sql" or "a2a".
	Kind string `cel:"kind"`
	// Destructive marks a tool that may change or delete data. The runtime
	// sets it from the tool's annotations (destructiveHint: true, or
	// readOnlyHint: false without a destructiveHint) or the operator's
	// overrides of them; when no rule matches, destructive tools get the
	// policies.approval setting.
	Destructive bool `cel:"destructive"`
	// ReadOnly is the tool's readOnlyHint annotation, or its override.
	ReadOnly bool `cel:"read_only"`
	// Idempotent is the tool's idempotentHint annotation, or its override.
	Idempotent bool `cel:"idempotent"`
	// ClassifiedBy says where the three came from: "server" (the tool's
	// own annotations), "override" (the operator's) or "untrusted" (a
	// server whose annotations are not trusted).
	ClassifiedBy string `cel:"classified_by"`
	// Flags are what screening the tool's definition found, sorted:
	// "hidden_unicode", "instructions", "shadowing" (see
	// TOOL_DESCRIPTOR_SUSPICIOUS). Empty for a tool nothing was found in,
	// so `size(tool.flags) > 0` denies every flagged tool.
	Flags []string `cel:"flags"`
}

// Input is everything a decision is made on. Decide reads it and never
// changes it; its maps and slices must not change while Decide runs.
type Input struct {
	Tool Tool
	// Caller is who the call is made for, as rules see it through the CEL
	// variable `caller` (caller.subject, caller.roles, caller.claims). The
	// zero Identity is anonymous, so a rule such as `"sre" in caller.roles`
	// is false for it.
	Caller heddle.Identity
	// Args are the call's arguments as decoded from JSON (numbers are
	// float64; CEL compares them with ints as numbers, so
	// `args.limit > 100` works). Nil means no arguments.
	Args map[string]any
}
