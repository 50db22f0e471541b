package config

import (
	"regexp"
	"strings"

	"github.com/heddlehq/heddle/config/setting"
)

// Ref is a typed secret reference: ${secrets:/path}, ${env:NAME} or
// ${file:PATH}; see [setting.Ref].
type Ref = setting.Ref

// RefProblem says why a value is not a secret reference; see
// [setting.RefProblem].
type RefProblem = setting.RefProblem

// Why a value is not a secret reference.
const (
	RefLiteral       = setting.RefLiteral
	RefMalformed     = setting.RefMalformed
	RefSchemeUnknown = setting.RefSchemeUnknown
)

// Schemes of secret references.
const (
	SchemeSecrets = setting.SchemeSecrets
	SchemeEnv     = setting.SchemeEnv
	SchemeFile    = setting.SchemeFile
)

// ParseRef parses a secret reference; see [setting.ParseRef]. It never
// fails: a value that is not a reference comes back with Problem set and no
// trace of the value.
func ParseRef(s string) Ref { return setting.ParseRef(s) }

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
