package setting

import (
	"fmt"
	"regexp"
	"strings"
)

// Ref is a typed secret reference: ${secrets:/path}, ${env:NAME} or
// ${file:PATH}. It is decoded from the configuration and resolved only at
// start-up, through a secrets resolver.
//
// A value that is not a well-formed reference decodes into a Ref whose
// Problem says why; the value itself is dropped on decoding and never kept,
// so no later message can repeat it.
type Ref struct {
	Scheme string // "secrets", "env" or "file"
	Name   string // the path or variable name

	// Problem is non-empty when the written value was not a reference.
	Problem RefProblem
}

// RefProblem says why a value is not a secret reference.
type RefProblem string

const (
	// RefLiteral: the value is a literal, not a reference.
	RefLiteral RefProblem = "a literal value where a secret reference belongs"
	// RefMalformed: the value looks like a reference but is not well formed.
	RefMalformed RefProblem = "a malformed secret reference"
	// RefSchemeUnknown: the reference names an unknown scheme.
	RefSchemeUnknown RefProblem = "a secret reference with an unknown scheme (want secrets, env or file)"
)

// Schemes of secret references.
const (
	SchemeSecrets = "secrets"
	SchemeEnv     = "env"
	SchemeFile    = "file"
)

var (
	refPattern     = regexp.MustCompile(`^\$\{([a-z]+):([^{}\s]+)\}$`)
	envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ParseRef parses a secret reference. It never fails: a value that is not a
// reference comes back with Problem set and no trace of the value.
func ParseRef(s string) Ref {
	s = strings.TrimSpace(s)
	m := refPattern.FindStringSubmatch(s)
	if m == nil {
		if strings.Contains(s, "${") {
			return Ref{Problem: RefMalformed}
		}
		return Ref{Problem: RefLiteral}
	}
	scheme, name := m[1], m[2]
	switch scheme {
	case SchemeSecrets:
		if !strings.HasPrefix(name, "/") || strings.Contains(name, "..") || strings.HasSuffix(name, "/") {
			return Ref{Problem: RefMalformed}
		}
	case SchemeEnv:
		if !envNamePattern.MatchString(name) {
			return Ref{Problem: RefMalformed}
		}
	case SchemeFile:
		if strings.Contains(name, "\x00") {
			return Ref{Problem: RefMalformed}
		}
	default:
		return Ref{Problem: RefSchemeUnknown}
	}
	return Ref{Scheme: scheme, Name: name}
}

// UnmarshalText decodes a reference; see [ParseRef].
func (r *Ref) UnmarshalText(b []byte) error {
	*r = ParseRef(string(b))
	return nil
}

// Valid reports whether r is a well-formed reference.
func (r *Ref) Valid() bool { return r != nil && r.Problem == "" && r.Scheme != "" }

// String returns the reference as written, ${scheme:name}, or a placeholder
// naming the problem; it never returns a secret value.
func (r Ref) String() string {
	if r.Problem != "" || r.Scheme == "" {
		return "<invalid reference>"
	}
	return fmt.Sprintf("${%s:%s}", r.Scheme, r.Name)
}

// MarshalText encodes the reference as written.
func (r Ref) MarshalText() ([]byte, error) { return []byte(r.String()), nil }
