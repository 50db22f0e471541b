package mcpkind

import (
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/heddlehq/heddle/auth"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
)

// Header is one of a server's headers as the plan records it: a secret
// reference (never its value), or a plain value.
type Header struct {
	Ref   *config.Ref `json:"ref,omitempty"`
	Value string      `json:"value,omitempty"`
}

// headerNameRE is an HTTP header name (a token, RFC 9110).
var headerNameRE = regexp.MustCompile("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")

// transportHeaders are set by the transport itself: a server's headers may
// not replace them.
var transportHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Content-Type": true, "Transfer-Encoding": true,
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Upgrade": true, "Te": true,
	"Trailer": true, "Accept": true, "Mcp-Session-Id": true, "Mcp-Protocol-Version": true, "Last-Event-Id": true,
}

// credentialHeaderWords are the last words (split at -) of the names of
// headers that carry a credential: X-Api-Key, X-Auth-Token, X-Client-Secret.
var credentialHeaderWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true, "password": true,
	"passwd": true, "credential": true, "credentials": true,
}

// CredentialHeader reports whether a header of this name carries a
// credential, and so must be written as a secret reference:
// Authorization, Proxy-Authorization, Cookie, and names ending in -Key,
// -Token, -Secret (or -Password, -Credentials), case-insensitively.
func CredentialHeader(name string) bool {
	switch n := strings.ToLower(name); n {
	case "authorization", "proxy-authorization", "cookie":
		return true
	default:
		return credentialHeaderWords[n[strings.LastIndexByte(n, '-')+1:]]
	}
}

// checkHeaders validates the headers of an http or sse server: names are
// header names the transport does not set itself, each once whatever its
// case; values are plain values or references, and a credential's header
// (see [CredentialHeader]) must be a reference. Authorization beside
// headers_ref or auth is MCP_AUTH_CONFLICT: the strategy sets it. No value
// is ever repeated in a message.
func checkHeaders(s *ServerConfig, p string) diag.Diagnostics {
	var ds diag.Diagnostics
	seen := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
		hp := config.Join(p, "headers", name)
		canon := http.CanonicalHeaderKey(name)
		switch {
		case !headerNameRE.MatchString(name):
			ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, hp, "%q is not an HTTP header name", name))
			continue
		case transportHeaders[canon]:
			ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, hp, "the transport sets %s itself; headers may not", canon))
			continue
		case seen[canon] != "":
			ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, hp, "header %s is also written as %q: header names are case-insensitive", canon, seen[canon]))
			continue
		case canon == "Authorization" && (s.HeadersRef != nil || s.Auth != nil):
			ds = append(ds, diag.Errorf(diag.MCPAuthConflict, hp, "the server's auth strategy sets Authorization; headers may not set it too").
				WithDetail("keep the credential in the strategy (auth or headers_ref), or drop the strategy"))
		}
		seen[canon] = name
		ds = append(ds, checkHeaderValue(name, s.Headers[name], hp)...)
	}
	return ds
}

// checkHeaderValue validates the value of header name at p.
func checkHeaderValue(name, v string, p string) diag.Diagnostics {
	if strings.HasPrefix(strings.TrimSpace(v), "${") {
		r := config.ParseRef(v)
		return grants.CheckRef(&r, p)
	}
	switch {
	case CredentialHeader(name):
		return diag.Diagnostics{diag.Errorf(diag.MCPCredentialsInline, p,
			"header %s carries a credential and must be a secret reference, not a literal (value redacted)", http.CanonicalHeaderKey(name)).
			WithDetail("store the value with your secret store and write a reference: ${secrets:/path}, ${env:NAME} or ${file:PATH}")}
	case strings.TrimSpace(v) == "":
		return diag.Diagnostics{diag.Errorf(diag.ConfigValueInvalid, p, "the header has no value")}
	case strings.ContainsAny(v, "\r\n\x00"):
		return diag.Diagnostics{diag.Errorf(diag.ConfigValueInvalid, p, "the value holds a line break or a NUL (value redacted)")}
	case auth.HasUserinfo(v):
		return diag.Diagnostics{userinfo(p)}
	}
	return nil
}

// buildHeaders is a server's headers as the plan records them, by
// canonical name: references as references, plain values as written.
func buildHeaders(in map[string]string) map[string]Header {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]Header, len(in))
	for name, v := range in {
		h := Header{Value: v}
		if strings.HasPrefix(strings.TrimSpace(v), "${") {
			r := config.ParseRef(v)
			h = Header{Ref: &r}
		}
		out[http.CanonicalHeaderKey(name)] = h
	}
	return out
}

// checkEnvLiterals warns of a literal in a stdio server's env under a
// credential's name (GITHUB_TOKEN, API_KEY, DB_PASSWORD; see
// auth.CredentialName): the value sits in the configuration file, and the
// plan shows its hash. It is a warning, not an error: the name is a guess.
func checkEnvLiterals(env map[string]*config.EnvValue, p string) diag.Diagnostics {
	var ds diag.Diagnostics
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		if v == nil || v.Ref != nil || v.Problem != "" || v.Literal == "" || !auth.CredentialName(k) {
			continue
		}
		ds = append(ds, diag.Warnf(diag.MCPCredentialsInline, config.Join(p, k),
			"variable %s looks like a credential but holds a literal (value redacted)", k).
			WithDetail("store the value with your secret store and write a reference: ${secrets:/path}, ${env:NAME} or ${file:PATH}"))
	}
	return ds
}

// checkUserinfo refuses a URL carrying credentials in its userinfo in the
// entry's other plain settings: the command, its arguments and its
// directory (url is CheckURL's, env values CheckEnv's).
func checkUserinfo(s *ServerConfig, p string) diag.Diagnostics {
	var ds diag.Diagnostics
	if auth.HasUserinfo(s.Command) {
		ds = append(ds, userinfo(config.Join(p, "command")))
	}
	for i, a := range s.Args {
		if auth.HasUserinfo(a) {
			ds = append(ds, userinfo(config.Item(config.Join(p, "args"), i)))
		}
	}
	if auth.HasUserinfo(s.Dir) {
		ds = append(ds, userinfo(config.Join(p, "dir")))
	}
	return ds
}

// userinfo is the refusal of a URL that carries credentials at p.
func userinfo(p string) diag.Diagnostic {
	return diag.Errorf(diag.MCPCredentialsInline, p, "the value is a URL that carries credentials in its userinfo (value redacted)").
		WithDetail("remove them; pass a credential through a secret reference: headers, headers_ref, an auth strategy or env")
}
