package sqlkind

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
		c := sql[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			i = skipQuoted(sql, i, c)
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			end := indexFrom(sql, "*/", i+2)
			if end < 0 {
				return out
			}
			i = end + 2
		case c == ':' && i+1 < len(sql) && sql[i+1] == ':':
			i += 2
		case c == ':' && i+1 < len(sql) && isIdentStart(sql[i+1]) && (i == 0 || !isIdentPart(sql[i-1])):
			j := i + 1
			for j < len(sql) && isIdentPart(sql[j]) {
				j++
			}
			out = append(out, Placeholder{Name: sql[i+1 : j], Start: i, End: j})
			i = j
		default:
			i++
		}
	}
	return out
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

func indexFrom(s, sub string, from int) int {
	for i := from; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || c >= '0' && c <= '9' }
