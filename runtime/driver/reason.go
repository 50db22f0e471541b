package driver

import (
	"errors"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/secrets"
)

// MaxReason bounds a Dependency's Reason, in bytes.
const MaxReason = 200

// Reason is the Reason of dependency name when it is not ready, made from
// err, the coded error of why: the message of its first diag.Error, which
// is written to be shown (it names settings, commands and hosts, never a
// secret), less its lead-in naming the dependency ("server catalog: ",
// "server catalog "), which the report shows beside it. It is "" when err carries no coded
// error: a library's own text may quote a URL or a credential.
//
// A message may still quote what a dependency said — a stdio server's last
// line on stderr — so Reason redacts besides, each part reading
// [redacted]: every value of hide (the secret values the dependency was
// given, such as its resolved env; values under four bytes are left
// alone, they would blank out ordinary words), the userinfo and query of
// any URL, a bearer or basic credential of 16 bytes or more, and the value
// of a key=value or key: value whose key names a secret (password, token,
// secret, api_key, …). Control characters and line breaks become spaces,
// and the result is cut to MaxReason bytes, "…" marking the cut.
func Reason(err error, name string, hide ...string) string {
	var e *diag.Error
	if !errors.As(err, &e) {
		return ""
	}
	msg := leadIn(e.Message, name)
	for _, h := range hide {
		if len(h) >= 4 {
			msg = strings.ReplaceAll(msg, h, secrets.Redacted)
		}
	}
	msg = urlUserinfo.ReplaceAllString(msg, "${1}"+secrets.Redacted+"@")
	msg = urlQuery.ReplaceAllString(msg, "${1}?"+secrets.Redacted)
	msg = authScheme.ReplaceAllString(msg, "${1} "+secrets.Redacted)
	msg = secretValue.ReplaceAllString(msg, "${1}${2}"+secrets.Redacted)
	return cutReason(flatten(msg), MaxReason)
}

var (
	// urlUserinfo is the scheme and userinfo of a URL (postgres://u:p@h).
	urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#@"']*@`)
	// urlQuery is a URL up to its query string.
	urlQuery = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s?#"']*)\?[^\s#"']*`)
	// authScheme is an Authorization header's scheme and credential.
	authScheme = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{16,}`)
	// secretValue is a key that names a secret, its = or :, and its value.
	secretValue = regexp.MustCompile(`(?i)\b([A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|authorization|credentials?|private[_-]?key)[A-Za-z0-9_.-]*)(\\?"?\s*[=:]\s*\\?"?)[^\s"',;&\\]+`)
)

// leadIn is msg less its lead-in naming the dependency name: one or two
// words before the name ("server", "sql source"), then ": " or " ".
func leadIn(msg, name string) string {
	if name == "" {
		return msg
	}
	for _, sep := range []string{": ", " "} {
		i := strings.Index(msg, " "+name+sep)
		if i > 0 && strings.Count(msg[:i], " ") <= 1 && !strings.ContainsAny(msg[:i], ":;,") {
			return msg[i+1+len(name)+len(sep):]
		}
	}
	return msg
}

// flatten turns every run of white space and control characters into one
// space, and trims the ends.
func flatten(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError
	}), " ")
}

// cutReason shortens s to at most max bytes, "…" included, without
// splitting a character.
func cutReason(s string, max int) string {
	if len(s) <= max {
		return s
	}
	end := max - len("…")
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "…"
}
