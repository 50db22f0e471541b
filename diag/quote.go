package diag

import "strconv"

// EchoLimit is how many characters of what a caller sent — a tool or
// agent name, an argument — a message repeats; the rest is cut and "…"
// marks the cut. A message stays short whatever the caller sent, and what
// it repeats cannot flood a log or a model's context.
const EchoLimit = 64

// Quote returns s as a message repeats what a caller sent: cut after
// EchoLimit characters (with "…"), then quoted as %q quotes.
//
//	diag.New(diag.AgentUnknown, "no agent %s in the plan", diag.Quote(name))
func Quote(s string) string { return strconv.Quote(Clip(s)) }

// Clip returns s cut after EchoLimit characters, with "…" marking the cut.
// A byte that is not UTF-8 counts as one character.
func Clip(s string) string {
	if len(s) <= EchoLimit {
		return s
	}
	n := 0
	for i := range s {
		if n == EchoLimit {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
