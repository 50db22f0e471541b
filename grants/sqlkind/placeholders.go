package sqlkind

import "strings"

// Placeholder is one :name parameter in a statement's text.
type Placeholder struct {
	Name       string
	Start, End int // byte offsets of ":name"
}

// Placeholders returns the :name parameters of a statement, in order,
// skipping string literals, quoted identifiers, comments and PostgreSQL's
// :: casts. Statement text is never spliced: the runtime rewrites each
// placeholder into the driver's own bind marker.
func Placeholders(sql string) []Placeholder {
	var out []Placeholder
	for i := 0; i < len(sql); {
		if next := skipIgnored(sql, i); next > i {
			i = next
			continue
		}
		if p, ok := placeholderAt(sql, i); ok {
			out = append(out, p)
			i = p.End
			continue
		}
		i++
	}
	return out
}

// skipIgnored returns where the text that can hold no placeholder and
// starts at i ends: a quoted string or identifier, a comment (an unclosed
// one runs to the end) or a :: cast. It returns i when none starts there.
func skipIgnored(sql string, i int) int {
	rest := sql[i:]
	switch {
	case rest[0] == '\'' || rest[0] == '"' || rest[0] == '`':
		return skipQuoted(sql, i, rest[0])
	case strings.HasPrefix(rest, "--"):
		if end := strings.IndexByte(rest, '\n'); end >= 0 {
			return i + end
		}
		return len(sql)
	case strings.HasPrefix(rest, "/*"):
		if end := strings.Index(rest[2:], "*/"); end >= 0 {
			return i + 2 + end + 2
		}
		return len(sql)
	case strings.HasPrefix(rest, "::"):
		return i + 2
	}
	return i
}

// placeholderAt returns the placeholder at i: a colon that does not end an
// identifier, followed by one.
func placeholderAt(sql string, i int) (Placeholder, bool) {
	if sql[i] != ':' || i+1 == len(sql) || !isIdentStart(sql[i+1]) || i > 0 && isIdentPart(sql[i-1]) {
		return Placeholder{}, false
	}
	j := i + 1
	for j < len(sql) && isIdentPart(sql[j]) {
		j++
	}
	return Placeholder{Name: sql[i+1 : j], Start: i, End: j}, true
}

func skipQuoted(s string, i int, q byte) int {
	for j := i + 1; j < len(s); j++ {
		if s[j] == q {
			if j+1 < len(s) && s[j+1] == q { // doubled quote escapes itself
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || c >= '0' && c <= '9' }
