package setting

import (
	"strconv"
	"strings"
)

// PathString joins path segments: map keys with dots, list indexes in
// brackets, and keys that contain dots or brackets (or are empty) quoted in brackets:
// ai.mcp_servers.runbooks.args[0], ai.mcp_servers["run.books"].url.
func PathString(segs []string) string {
	var b strings.Builder
	for i, s := range segs {
		switch {
		case isIndex(s):
			b.WriteString("[" + s + "]")
		case s == "" || strings.ContainsAny(s, ".[]\" "):
			b.WriteString("[" + strconv.Quote(s) + "]")
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

// SplitPath is the inverse of [PathString]. It also reads mapstructure's
// names, where map keys are written in unquoted brackets (servers[run.books]).
func SplitPath(p string) []string {
	var segs []string
	for len(p) > 0 {
		switch p[0] {
		case '.':
			p = p[1:]
		case '[':
			end := -1
			if len(p) > 1 && p[1] == '"' {
				if s, err := strconv.QuotedPrefix(p[1:]); err == nil {
					if u, err := strconv.Unquote(s); err == nil && len(p) > len(s)+1 && p[len(s)+1] == ']' {
						segs = append(segs, u)
						p = p[len(s)+2:]
						continue
					}
				}
			}
			end = strings.IndexByte(p, ']')
			if end < 0 {
				return append(segs, p[1:])
			}
			segs = append(segs, p[1:end])
			p = p[end+1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				return append(segs, p)
			}
			segs = append(segs, p[:end])
			p = p[end:]
		}
	}
	return segs
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Join appends keys to a path.
func Join(path string, keys ...string) string {
	return PathString(append(SplitPath(path), keys...))
}

// Item appends a list index to a path.
func Item(path string, i int) string { return Join(path, strconv.Itoa(i)) }
