package heddlecmd

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// distance is the Levenshtein edit distance between a and b, by bytes:
// the names it compares (commands, flags, agents, tools) are ASCII.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// closest returns up to n of candidates, nearest to got first (ties in
// the candidates' order). Nearest is by edit distance, except that got as a
// prefix of a candidate is an abbreviation, as near as one typo ("--log"
// for --log-level). With near, it keeps only plausible misspellings: within
// a third of got's length (at least two edits), an abbreviation, or a
// candidate that got begins with ("warning" for warn). Without near, it
// keeps the n nearest whatever their distance.
func closest(got string, candidates []string, n int, near bool) []string {
	type scored struct {
		name string
		d    int
	}
	g := strings.ToLower(got)
	var ss []scored
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := distance(g, lc)
		abbrev := len(g) >= 2 && strings.HasPrefix(lc, g)
		if abbrev {
			d = min(d, 1)
		}
		if near && !abbrev && d > max(2, len(g)/3) && !(len(lc) >= 2 && strings.HasPrefix(g, lc)) {
			continue
		}
		ss = append(ss, scored{c, d})
	}
	slices.SortStableFunc(ss, func(a, b scored) int { return cmp.Compare(a.d, b.d) })
	var out []string
	for _, s := range ss {
		if len(out) == n {
			break
		}
		out = append(out, s.name)
	}
	return out
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
	msg := fmt.Sprintf("%s: agent %s has no tool %q; closest: %s (heddle tools %s lists all %d)",
		diag.ToolUnknown, agent, name, strings.Join(closest(name, names, 3, false), ", "), agent, len(tools))
	res.Content[0] = &mcp.TextContent{Text: msg}
}
