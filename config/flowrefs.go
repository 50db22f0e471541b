package config

import (
	"bytes"
	"regexp"
)

// quoteFlowRefs quotes unquoted secret references so that they may stand in
// YAML flow collections, as in
//
//	auth: {kind: bearer, token_ref: ${secrets:/heddle/catalog/token}}
//
// where YAML itself would read the reference's braces as the mapping's. A
// reference is quoted only where a plain scalar starts (after ": ", "[",
// "{", ", " or "- "), outside quoted scalars, comments and block scalars,
// so quoting never changes a value: a plain scalar and a double-quoted one
// holding the same characters are the same string.
func quoteFlowRefs(data []byte) []byte {
	if !bytes.Contains(data, []byte("${")) {
		return data
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	blockIndent := -1 // indentation of the key that opened a block scalar
	for i, line := range lines {
		indent := len(line) - len(bytes.TrimLeft(line, " "))
		trimmed := bytes.TrimSpace(line)
		if blockIndent >= 0 {
			if len(trimmed) == 0 || indent > blockIndent {
				continue
			}
			blockIndent = -1
		}
		lines[i] = quoteLine(line)
		if blockStartRE.Match(trimmed) {
			blockIndent = indent
		}
	}
	return bytes.Join(lines, nil)
}

var (
	blockStartRE = regexp.MustCompile(`(^|:\s|^-\s)[|>][0-9+-]*\s*(#.*)?$`)
	flowRefRE    = regexp.MustCompile(`^\$\{[a-z]+:[^{}\s"'#,\[\]]*\}`)
)

func quoteLine(line []byte) []byte {
	var out []byte
	var quote byte
	for j := 0; j < len(line); j++ {
		c := line[j]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			if j == 0 || bytes.IndexByte([]byte(" \t:[{,-"), line[j-1]) >= 0 {
				quote = c
			}
		case c == '#' && (j == 0 || line[j-1] == ' ' || line[j-1] == '\t'):
			return append(out, line[j:]...)
		case c == '$' && startsScalar(line, j):
			if m := flowRefRE.Find(line[j:]); m != nil {
				out = append(out, '"')
				out = append(out, m...)
				out = append(out, '"')
				j += len(m) - 1
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// startsScalar reports whether a plain scalar can start at line[j].
func startsScalar(line []byte, j int) bool {
	k := j - 1
	for k >= 0 && (line[k] == ' ' || line[k] == '\t') {
		k--
	}
	if k < 0 {
		return true
	}
	switch line[k] {
	case '[', '{', ',':
		return true
	case ':', '-':
		return k < j-1 // followed by white space
	}
	return false
}
