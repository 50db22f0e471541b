package auth

import (
	"net/url"
	"strings"
	"unicode"
)

// credentialWords are the word parts that make a setting's or a variable's
// name a credential's: GITHUB_TOKEN, api_key, clientSecret, DB_PASSWORD.
var credentialWords = map[string]bool{
	"token": true, "secret": true, "password": true, "passwd": true, "key": true,
	"apikey": true, "pat": true, "credential": true, "credentials": true,
	"auth": true, "authorization": true,
}

// credentialSuffixes are the endings that make a glued word a credential's
// (GITHUBTOKEN, APIKEY, CLIENTSECRET). Key, pat and auth are not among
// them: MONKEY, COMPAT and OAUTH are not credentials.
var credentialSuffixes = []string{"token", "secret", "password", "passwd", "apikey", "credential", "credentials"}

// qualifiers are last word parts that make a name say something about a
// credential rather than hold one: TOKEN_URL, AUTH_PORT, KEY_ID,
// GITHUB_TOKEN_FILE.
var qualifiers = map[string]bool{
	"url": true, "uri": true, "endpoint": true, "host": true, "port": true, "path": true,
	"file": true, "dir": true, "id": true, "name": true, "type": true, "header": true,
	"scheme": true, "enabled": true, "audience": true, "issuer": true, "scope": true,
	"scopes": true, "ttl": true, "expiry": true, "timeout": true, "length": true,
	"size": true, "mode": true, "method": true, "prefix": true, "version": true,
	"env": true, "var": true, "kind": true, "flow": true, "ref": true,
}

// CredentialName reports whether name, a setting's or an environment
// variable's, names a credential. The name is split into words at _, -
// and . and where a lower-case letter meets an upper-case one (apiKey),
// case-insensitively; it names a credential when a word is one of token,
// secret, password, passwd, key, apikey, pat, credential(s), auth and
// authorization, or ends in token, secret, password, passwd, apikey or
// credential(s), unless its last word qualifies it (TOKEN_URL, KEY_ID,
// GITHUB_TOKEN_FILE). KEYBOARD and MONKEY are not credentials' names.
func CredentialName(name string) bool {
	words := splitWords(name)
	if len(words) == 0 || qualifiers[words[len(words)-1]] {
		return false
	}
	for _, w := range words {
		if credentialWords[w] {
			return true
		}
		for _, suf := range credentialSuffixes {
			if strings.HasSuffix(w, suf) {
				return true
			}
		}
	}
	return false
}

// splitWords splits name into lower-case words.
func splitWords(name string) []string {
	var words []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			words = append(words, strings.ToLower(b.String()))
			b.Reset()
		}
	}
	prevLower := false
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.':
			flush()
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			flush()
		}
		b.WriteRune(r)
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	flush()
	return words
}

// HasUserinfo reports whether s is a URL that carries credentials in its
// userinfo (scheme://user:password@host, or scheme://token@host).
func HasUserinfo(s string) bool {
	s = strings.TrimSpace(s)
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || scheme == "" || strings.ContainsAny(scheme, "/?#@ ") {
		return false
	}
	if u, err := url.Parse(s); err == nil {
		return u.User != nil
	}
	authority, _, _ := strings.Cut(rest, "/") // unparsable: judge the authority as written
	authority, _, _ = strings.Cut(authority, "?")
	authority, _, _ = strings.Cut(authority, "#")
	return strings.Contains(authority, "@")
}
