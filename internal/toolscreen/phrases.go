package toolscreen

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Phrases are the texts that address the model rather than describe a
// tool. They are matched whole words, case-insensitively, after NFKC,
// hidden characters dropped and runs of white space folded to one space;
// punctuation is a word of its own, so "<IMPORTANT>" matches "< important >"
// and "ignores case" matches nothing. The list is short on purpose: each
// entry is a phrase a tool's documentation has no reason to hold (docs/
// policies.md#tool-flags lists them).
var Phrases = []string{
	"ignore previous instructions",
	"ignore all previous",
	"ignore all prior",
	"ignore prior instructions",
	"ignore the above",
	"ignore your instructions",
	"disregard previous instructions",
	"disregard all previous",
	"disregard all prior",
	"disregard the above",
	"disregard your instructions",
	"forget previous instructions",
	"forget all previous",
	"forget your instructions",
	"you must now",
	"from now on you",
	"new instructions:",
	"system prompt",
	"do not tell the user",
	"don't tell the user",
	"do not mention this to the user",
	"do not inform the user",
	"without telling the user",
	"hide this from the user",
	"<important>",
	"<system>",
	"<instructions>",
	"before using this tool, read",
	"before using this tool read",
	"~/.ssh",
	"id_rsa",
	"~/.aws/credentials",
}

// folded are Phrases as words, each between spaces.
var folded = func() []string {
	out := make([]string, len(Phrases))
	for i, p := range Phrases {
		out[i] = " " + words(p) + " "
	}
	return out
}()

// instruction returns the first phrase s holds, or "".
func instruction(s string) string {
	w := " " + words(s) + " "
	for i, p := range folded {
		if strings.Contains(w, p) {
			return Phrases[i]
		}
	}
	return ""
}

// words is s as lower-case words separated by one space: letters and digits
// make words, every other visible character is a word of its own, hidden
// characters are dropped (tag characters read as the ASCII they mirror,
// since a model may read them so) and white space separates.
func words(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := true // at the start, no space is needed
	sep := func() {
		if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	for _, r := range norm.NFKC.String(s) {
		if r >= 0xE0020 && r <= 0xE007E {
			r -= 0xE0000 // a tag character spells the ASCII it shadows
		}
		switch {
		case Hidden(r):
			continue
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
			space = false
		case unicode.IsSpace(r):
			sep()
		default:
			if r == '’' || r == 'ʼ' {
				r = '\''
			}
			sep()
			b.WriteRune(r)
			space = false
			sep()
		}
	}
	return strings.TrimSuffix(b.String(), " ")
}
