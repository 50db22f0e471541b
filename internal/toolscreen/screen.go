// Package toolscreen screens the definitions of the tools an upstream
// server offers for what a model would read and an operator would not see:
// hidden Unicode (tag characters, bidirectional controls, zero-width and
// other format characters, private-use and control characters) and text
// that addresses the model rather than describes the tool ("ignore previous
// instructions", "<IMPORTANT>", "do not tell the user"). It is OWASP MCP03,
// tool poisoning. Shadowing — one tool named as another server's — needs
// every source of an agent, and is the toolset's to find, with Fold.
//
// A finding is a flag (the name rules see in tool.flags), the field it was
// found in, and an excerpt in which hidden characters are escaped (U+E0041),
// so that a log line or a message never carries them raw.
//
//	for _, f := range toolscreen.Tool(t) {
//		log.Warn("suspicious tool descriptor", "flag", f.Flag, "field", f.Field, "excerpt", f.Excerpt)
//	}
package toolscreen

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/text/unicode/norm"
)

// The flags a finding can carry: what rules see in tool.flags.
const (
	// HiddenUnicode: a character a reader does not see but a model reads.
	HiddenUnicode = "hidden_unicode"
	// Instructions: text that addresses the model, not the tool's use.
	Instructions = "instructions"
	// Shadowing: the tool's name equals, but for case or confusable
	// characters, a tool of another source of the same agent.
	Shadowing = "shadowing"
)

// Finding is one suspicious thing in a tool's definition.
type Finding struct {
	Flag  string
	Field string // name, title, description, annotations.title, input_schema.<path>
	// Excerpt is what was found, clipped, hidden characters escaped.
	Excerpt string
}

// String is the finding as a message names it.
func (f Finding) String() string {
	return fmt.Sprintf("%s in %s: %s", f.Flag, f.Field, f.Excerpt)
}

// Limits that keep screening linear and bounded on hostile input.
const (
	// maxText is how much of one text is screened: a description longer
	// than this is screened for its first maxText bytes.
	maxText = 64 << 10
	// maxStrings is how many texts of one input schema are screened.
	maxStrings = 4096
	// maxDepth is how deep an input schema is walked.
	maxDepth = 32
	// excerptRunes bounds an excerpt.
	excerptRunes = 60
)

// Tool screens a tool's name, title, description, annotations' title and
// its input schema's titles, descriptions and property names. It returns
// at most one finding per flag and field, in a stable order.
func Tool(t *mcp.Tool) []Finding {
	if t == nil {
		return nil
	}
	var out []Finding
	out = append(out, Text("name", t.Name)...)
	out = append(out, Text("title", t.Title)...)
	out = append(out, Text("description", t.Description)...)
	if t.Annotations != nil {
		out = append(out, Text("annotations.title", t.Annotations.Title)...)
	}
	if t.InputSchema != nil {
		out = append(out, schema(t.InputSchema)...)
	}
	return out
}

// Flags returns the distinct flags of fs, sorted.
func Flags(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Flag)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Text screens one text, naming it field in its findings.
func Text(field, s string) []Finding {
	if s == "" {
		return nil
	}
	if len(s) > maxText {
		s = s[:maxText]
	}
	var out []Finding
	if i := hiddenAt(s); i >= 0 {
		out = append(out, Finding{Flag: HiddenUnicode, Field: field, Excerpt: excerpt(s, i)})
	}
	if p := instruction(s); p != "" {
		out = append(out, Finding{Flag: Instructions, Field: field, Excerpt: fmt.Sprintf("%q", p)})
	}
	return out
}

// Hidden reports a character a reader does not see but a model reads:
// tag characters (U+E0000–U+E007F), bidirectional controls (U+202A–U+202E,
// U+2066–U+2069, U+200E, U+200F, U+061C), zero-width characters
// (U+200B–U+200D, U+2060, U+FEFF), any other format character (Cf),
// variation selectors of the supplement (U+E0100–U+E01EF, used to smuggle
// bytes), private-use characters, and control characters but tab, line
// feed and carriage return.
func Hidden(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return false
	case r >= 0xE0000 && r <= 0xE007F, r >= 0xE0100 && r <= 0xE01EF:
		return true
	case r < 0x80:
		return r < 0x20 || r == 0x7F
	}
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Co, r) || unicode.IsControl(r)
}

// hiddenAt is the byte offset of s's first hidden character, or -1.
func hiddenAt(s string) int {
	return strings.IndexFunc(s, Hidden)
}

// Escape returns s with every hidden character written U+XXXX, and clipped
// to n runes (n <= 0: not clipped), so that it can be logged.
func Escape(s string, n int) string {
	var b strings.Builder
	count := 0
	for _, r := range s {
		if n > 0 && count >= n {
			b.WriteString("…")
			break
		}
		count++
		if Hidden(r) || r == utf8.RuneError {
			fmt.Fprintf(&b, "U+%04X", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// excerpt is the text around offset i of s, escaped.
func excerpt(s string, i int) string {
	start := i
	for back := 0; start > 0 && back < 10; back++ {
		_, size := utf8.DecodeLastRuneInString(s[:start])
		start -= size
	}
	return Escape(s[start:], excerptRunes)
}

// schema screens an input schema's titles, descriptions and property names.
func schema(v any) []Finding {
	var m any
	switch x := v.(type) {
	case map[string]any:
		m = x
	default:
		b, err := json.Marshal(v)
		if err != nil || json.Unmarshal(b, &m) != nil {
			return nil
		}
	}
	w := walker{seen: map[string]bool{}}
	w.walk(m, "input_schema", 0)
	return w.out
}

type walker struct {
	out  []Finding
	n    int
	seen map[string]bool // the flags found: one finding each over the schema
}

func (w *walker) text(field, s string) {
	if w.n >= maxStrings {
		return
	}
	w.n++
	for _, f := range Text(field, s) {
		if !w.seen[f.Flag] { // one finding per flag over the whole schema
			w.seen[f.Flag] = true
			w.out = append(w.out, f)
		}
	}
}

func (w *walker) walk(v any, path string, depth int) {
	if depth > maxDepth || w.n >= maxStrings {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			switch val := x[k].(type) {
			case string:
				if k == "description" || k == "title" {
					w.text(path+"."+k, val)
				}
			default:
				if k == "properties" {
					if props, ok := val.(map[string]any); ok {
						for _, name := range sortedKeys(props) {
							w.text(path+".properties", name)
						}
					}
				}
				w.walk(val, path+"."+k, depth+1)
			}
		}
	case []any:
		for i, e := range x {
			w.walk(e, fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Fold is a tool name reduced for comparison: NFKC, hidden characters
// dropped, lower case, confusable letters of other scripts mapped to the
// Latin ones they look like, and - and . made _. Two names that fold alike
// look alike to a model.
func Fold(name string) string {
	if len(name) > maxText {
		name = name[:maxText]
	}
	var b strings.Builder
	for _, r := range norm.NFKC.String(name) {
		if Hidden(r) {
			continue
		}
		r = unicode.ToLower(r)
		if c, ok := confusables[r]; ok {
			r = c
		}
		if r == '-' || r == '.' {
			r = '_'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// confusables maps the Cyrillic and Greek lower-case letters that look like
// Latin ones to those (a subset of Unicode's confusables, the letters a
// tool name is spoofed with).
var confusables = map[rune]rune{
	'а': 'a', 'в': 'b', 'е': 'e', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c',
	'т': 't', 'у': 'y', 'х': 'x', 'ѕ': 's', 'і': 'i', 'ј': 'j', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ӏ': 'l',
	'α': 'a', 'β': 'b', 'ε': 'e', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x',
}
