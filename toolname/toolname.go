// Package toolname makes tool names every model API accepts.
//
// Model APIs accept tool names matching ^[a-zA-Z0-9_-]{1,64}$, while MCP
// allows 128 characters including dots. heddle keeps a tool's bare name when
// it can, qualifies it as server__tool when two sources share it, replaces
// any other character with '_', and fits long names into 64 characters by
// cutting them and appending a short, stable hash of the full name:
//
//	toolname.Sanitize("run.books")                 // "run_books"
//	toolname.Qualify("git", "status")              // "git__status"
//	toolname.Fit(strings.Repeat("x", 80))          // 55 x's, "_", 8 hex digits
//
// The functions are pure and deterministic: the same inputs give the same
// name on every worker and in every release.
package toolname

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// MaxLen is the longest name model APIs accept.
const MaxLen = 64

// Separator joins a source's prefix and a tool's name in a qualified name.
const Separator = "__"

// hashLen is the number of hex digits of the suffix given to cut names.
const hashLen = 8

var valid = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Valid reports whether name is acceptable as it is.
func Valid(name string) bool { return valid.MatchString(name) }

// Sanitize replaces every character outside [a-zA-Z0-9_-] with '_'. An
// empty name becomes "_".
func Sanitize(name string) string {
	if name == "" {
		return "_"
	}
	if clean(name) {
		return name // the common case: nothing to replace, nothing to allocate
	}
	out := make([]byte, 0, len(name))
	for _, r := range name {
		if r < 128 && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			out = append(out, byte(r))
		} else {
			out = append(out, '_')
		}
	}
	return string(out)
}

// clean reports whether every byte of name is in [a-zA-Z0-9_-].
func clean(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Fit returns name if it is at most MaxLen long, and otherwise its first
// characters followed by "_" and a hash of the whole name, MaxLen in all.
// The hash keeps two long names that share a prefix apart.
func Fit(name string) string {
	if len(name) <= MaxLen {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	h := hex.EncodeToString(sum[:])[:hashLen]
	return name[:MaxLen-hashLen-1] + "_" + h
}

// Bare returns the model-facing form of a tool's own name: sanitized and fit.
func Bare(tool string) string { return Fit(Sanitize(tool)) }

// Qualify returns prefix__tool, sanitized and fit.
func Qualify(prefix, tool string) string {
	return Fit(Sanitize(prefix) + Separator + Sanitize(tool))
}

// Split splits a qualified name (prefix__tool) or a legacy dotted one
// (prefix.tool) at its first separator. ok is false when there is none.
func Split(name string) (prefix, tool string, ok bool) {
	if p, t, found := strings.Cut(name, Separator); found && p != "" && t != "" {
		return p, t, true
	}
	if p, t, found := strings.Cut(name, "."); found && p != "" && t != "" {
		return p, t, true
	}
	return "", "", false
}
