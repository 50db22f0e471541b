package config

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

// EnvValue is one value of a stdio server's env: either a secret reference or
// a literal. Literals are kept (they reach the child process) but are only
// ever printed as a hash.
type EnvValue struct {
	Ref     *Ref
	Literal string
	// Problem is non-empty when the value cannot be a value at all (spaces,
	// braces, quotes, userinfo): the mark of a broken interpolation.
	Problem string
}

// UnmarshalText decodes an env value.
func (v *EnvValue) UnmarshalText(b []byte) error {
	*v = ParseEnvValue(string(b))
	return nil
}

// ParseEnvValue classifies an env value. It never fails.
func ParseEnvValue(s string) EnvValue {
	if strings.HasPrefix(strings.TrimSpace(s), "${") {
		r := ParseRef(s)
		if r.Problem != "" {
			return EnvValue{Problem: string(r.Problem)}
		}
		return EnvValue{Ref: &r}
	}
	if p := envValueProblem(s); p != "" {
		return EnvValue{Problem: p}
	}
	return EnvValue{Literal: s}
}

// envValueProblem rejects what cannot be a value at all.
func envValueProblem(s string) string {
	switch {
	case strings.ContainsAny(s, " \t\r\n"):
		return "it contains white space"
	case strings.ContainsAny(s, "{}"):
		return "it contains braces"
	case strings.ContainsAny(s, "\"'`"):
		return "it contains quotes"
	case userinfoPattern.MatchString(s):
		return "it contains URL credentials (userinfo)"
	}
	return ""
}

var userinfoPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@`)
