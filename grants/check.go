package grants

import (
	"net"
	"net/url"
	"path"
	"strings"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
)

// CheckURL validates a remote endpoint: https, or http to a loopback host;
// no userinfo, no query, no fragment. The URL is never repeated in the
// message — it may hold the very credential being refused.
func CheckURL(raw string, code diag.Code, p string) diag.Diagnostics {
	if strings.TrimSpace(raw) == "" {
		return diag.Diagnostics{diag.Errorf(code, p, "a URL is required")}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return diag.Diagnostics{diag.Errorf(code, p, "the URL cannot be parsed as scheme://host/path (value redacted)")}
	}
	var ds diag.Diagnostics
	switch u.Scheme {
	case "https":
	case "http":
		if !Loopback(u.Hostname()) {
			ds = append(ds, diag.Errorf(code, p, "the URL must use https (plain http is allowed only for loopback hosts; value redacted)"))
		}
	default:
		ds = append(ds, diag.Errorf(code, p, "the URL must use https (value redacted)"))
	}
	if u.User != nil {
		ds = append(ds, diag.Errorf(code, p, "the URL carries credentials in its userinfo (value redacted)").
			WithDetail("remove them and use headers_ref or an auth strategy with a secret reference"))
	}
	if u.RawQuery != "" || u.ForceQuery {
		ds = append(ds, diag.Errorf(code, p, "the URL carries a query string (value redacted)").
			WithDetail("query strings often hold credentials; use headers_ref or an auth strategy instead"))
	}
	if u.Fragment != "" {
		ds = append(ds, diag.Errorf(code, p, "the URL carries a fragment (value redacted)"))
	}
	return ds
}

// Loopback reports whether host names this machine.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckGlobs validates tool-name globs (path.Match syntax) at p[i].
func CheckGlobs(globs []string, code diag.Code, p string) diag.Diagnostics {
	var ds diag.Diagnostics
	for i, g := range globs {
		ds = append(ds, checkGlob(g, code, config.Item(p, i))...)
	}
	return ds
}

// checkGlob validates one tool-name glob, or name, at p.
func checkGlob(g string, code diag.Code, p string) diag.Diagnostics {
	if g == "" {
		return diag.Diagnostics{diag.Errorf(code, p, "an empty pattern matches no tool")}
	}
	if _, err := path.Match(g, ""); err != nil {
		return diag.Diagnostics{diag.Errorf(code, p, "malformed glob pattern %q", g).
			WithDetail("patterns use * for any run of characters, ? for one, and [a-z] for a class")}
	}
	return nil
}

// CheckRef reports a secret-reference setting that holds something else.
func CheckRef(r *config.Ref, p string) diag.Diagnostics {
	if r == nil || r.Valid() {
		return nil
	}
	return diag.Diagnostics{diag.Errorf(diag.MCPCredentialsInline, p, "%s", r.Problem).
		WithDetail("store the value with your secret store and write a reference: ${secrets:/path}, ${env:NAME} or ${file:PATH}")}
}

// Required reports whether a client is a start-up requirement: its own
// required: setting wins over ai.remote_clients.
func Required(own *bool, remoteClients string) bool {
	if own != nil {
		return *own
	}
	return remoteClients != config.RemoteClientsOptional
}

// Written reports whether the deployment names an entry (ai.<section>.<name>)
// even when decoding it failed: a grant of such an entry is not reported as
// unknown, since the entry has diagnostics of its own.
func Written(d *config.Deployment, section, name string) bool {
	return d.Index.Layer(config.Join("ai", section, name)) != ""
}

// AppendUnique appends s unless already last-added or present.
func AppendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// NameList lists names for a message's detail: joined with commas, or "none".
func NameList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
