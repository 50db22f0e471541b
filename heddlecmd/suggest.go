package heddlecmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/suggest"
	"github.com/heddlehq/heddle/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// closest returns up to n of candidates, nearest to got first: the rule
// of package suggest, which the configuration's diagnostics share.
func closest(got string, candidates []string, n int, near bool) []string {
	return suggest.Closest(got, candidates, n, near)
}

// unknownError is a usage error for a name that is not one of the valid
// ones: it names the closest of them, when one is near, and lists them all.
type unknownError struct {
	problem string   // `unknown command "chek"`
	got     string   // "chek", as the user typed it
	label   string   // "commands"
	valid   []string // every valid name, as the user would type it
}

func (u *unknownError) Error() string { return u.text("\n  ") }

// text is the error with sep before the list: a new line for a usage
// error, "; " for a coded error's one-line message.
func (u *unknownError) text(sep string) string {
	var b strings.Builder
	b.WriteString(u.problem)
	if c := closest(u.got, u.valid, 1, true); len(c) == 1 {
		fmt.Fprintf(&b, "; did you mean %s?", c[0])
		sep = strings.Replace(sep, ";", "", 1) // after the question mark
	}
	b.WriteString(sep)
	if len(u.valid) == 0 {
		fmt.Fprintf(&b, "there are no %s", u.label)
	} else {
		fmt.Fprintf(&b, "%s: %s", u.label, strings.Join(u.valid, ", "))
	}
	return b.String()
}

// unknownValue is the usage error for a value of an enumerated flag.
func unknownValue(flagName, got string, valid []string) error {
	return &unknownError{problem: fmt.Sprintf("unknown --%s %q", flagName, got), got: got, label: "valid values", valid: valid}
}

// suggestTools rewrites the text of a TOOL_UNKNOWN refusal for the command
// line, where no list of tools is in view: it names the agent's tools
// closest to the one asked for, up to three. The code stays.
func suggestTools(ctx context.Context, ts *runtime.Toolset, agent, name string, res *mcp.CallToolResult) {
	tools, err := ts.Tools(ctx)
	if err != nil || len(tools) == 0 || len(res.Content) == 0 {
		return
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	all := fmt.Sprintf("heddle tools %s lists all %d", agent, len(tools))
	if _, ok := heddle.LookupCaller(ctx); ok {
		all = fmt.Sprintf("of the %d this caller is listed", len(tools))
	}
	msg := fmt.Sprintf("%s: agent %s has no tool %q; closest: %s (%s)",
		diag.ToolUnknown, agent, name, strings.Join(closest(name, names, 3, false), ", "), all)
	res.Content[0] = &mcp.TextContent{Text: msg}
}
