package mcpkind

import (
	"net/url"
	"strings"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
)

// inferTransport settles the transport of an entry that writes none, the
// way MCP hosts (Claude Desktop, Cursor, VS Code) write their server lists:
// command makes it stdio, url Streamable HTTP. An entry that sets both, or
// neither, says nothing heddle can go by; it keeps no transport and gets an
// error naming what to set. A url ending in /sse, the legacy transport's
// usual endpoint, stays Streamable HTTP with a warning, since only the
// operator knows which of the two the server speaks.
//
// It reports whether the transport was inferred; an entry that writes its
// transport is left as it is.
func (s *ServerConfig) inferTransport(d *config.Deployment, p string) (bool, diag.Diagnostics) {
	if s.Transport != "" {
		return false, nil
	}
	switch command, u := s.Command != "", s.URL != ""; {
	case command && u:
		return true, diag.Diagnostics{diag.Errorf(diag.MCPConnectionConflict, p,
			"the server sets both command and url but no transport%s", layers(d, p, "command", "url")).
			WithDetail("keep command for a stdio server, or url for Streamable HTTP (transport: sse for the legacy HTTP+SSE transport); in an overlay that changes the transport, set the other key to null")}
	case command:
		s.Transport = TransportStdio
	case u:
		s.Transport = TransportHTTP
		if legacySSE(s.URL) {
			return true, diag.Diagnostics{diag.Warnf(diag.MCPTransportInvalid, config.Join(p, "url"),
				"the url ends in /sse, the legacy HTTP+SSE transport's endpoint, but a server without transport is Streamable HTTP").
				WithDetail("write transport: sse if the server speaks the legacy transport, or transport: http to keep Streamable HTTP without this warning")}
		}
	default:
		return true, diag.Diagnostics{diag.Errorf(diag.MCPTransportInvalid, p,
			"the server sets neither command nor url").
			WithDetail("set command (and args, env) for a server heddle starts over stdio, or url for one it reaches over Streamable HTTP; transport: sse with url for the legacy HTTP+SSE transport")}
	}
	return true, nil
}

// legacySSE reports whether raw is a URL whose path ends in /sse.
func legacySSE(raw string) bool {
	u, err := url.Parse(strings.TrimSpace(raw))
	return err == nil && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/sse")
}

// layers names the files that set two keys of one entry when they differ,
// as " (a from base.yaml, b from overlay.yaml)", or returns "".
func layers(d *config.Deployment, p, a, b string) string {
	la, lb := d.Index.Layer(config.Join(p, a)), d.Index.Layer(config.Join(p, b))
	if la == "" || lb == "" || la == lb {
		return ""
	}
	return " (" + a + " from " + la + ", " + b + " from " + lb + ")"
}
