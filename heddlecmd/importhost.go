package heddlecmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/heddlehq/heddle/auth"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/toolname"
	"github.com/tailscale/hujson"
)

// maxImportBytes bounds the MCP host file heddle import reads: hosts'
// server lists are a few kilobytes.
const maxImportBytes = 1 << 20

// imported is what heddle import makes of an MCP host's server list: the
// ai.mcp_servers entries, the secrets the operator must store for the
// references written in place of credentials, and notes on what was
// changed or left out. No credential's value is in any of them.
type imported struct {
	Servers map[string]*importedServer `json:"mcp_servers"`
	Secrets []importedSecret           `json:"secrets"`
	Notes   []string                   `json:"notes"`
}

// importedServer is one ai.mcp_servers entry, in the order heddle's
// documentation writes its settings.
type importedServer struct {
	Transport string            `yaml:"transport,omitempty" json:"transport,omitempty"`
	Command   string            `yaml:"command,omitempty" json:"command,omitempty"`
	Args      []string          `yaml:"args,omitempty" json:"args,omitempty"`
	Env       map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	Dir       string            `yaml:"dir,omitempty" json:"dir,omitempty"`
	URL       string            `yaml:"url,omitempty" json:"url,omitempty"`
	Headers   map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
}

// importedSecret is a value to store in the secret store at Path, for the
// reference written in its place: What names the value (env GITHUB_TOKEN,
// header Authorization), never the value itself.
type importedSecret struct {
	Server string `json:"server"`
	What   string `json:"what"`
	Path   string `json:"path"`
}

// hostTransports maps the type (or transport) a host writes to heddle's.
var hostTransports = map[string]string{
	"stdio": mcpkind.TransportStdio, "sse": mcpkind.TransportSSE,
	"http": mcpkind.TransportHTTP, "streamable-http": mcpkind.TransportHTTP,
	"streamableHttp": mcpkind.TransportHTTP, "streamable_http": mcpkind.TransportHTTP,
}

// hostKeys are the settings of a host's entry that heddle import reads;
// any other (alwaysAllow, autoApprove, timeout, …) is left out, with a note.
var hostKeys = []string{"type", "transport", "command", "args", "env", "cwd", "url", "serverUrl", "headers", "disabled"}

// inputRE is a VS Code input variable: ${input:id}.
var inputRE = regexp.MustCompile(`\$\{input:([^{}]*)\}`)

// importServers converts an MCP host's configuration — Claude Desktop's,
// Cursor's or Claude Code's {"mcpServers": {…}}, VS Code's
// {"servers": {…}, "inputs": […]} (or a settings.json's "mcp" object) —
// into ai.mcp_servers entries. JSON with comments and trailing commas, as
// VS Code accepts, is read too. A credential (a value under a credential's
// name, a VS Code input, a URL's userinfo) becomes a reference
// ${secrets:/mcp/<server>/<NAME>} listed in Secrets. A problem leaves no
// entry: the diagnostics say what, and never repeat a value.
func importServers(data []byte) (*imported, diag.Diagnostics) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(stripJSONC(data), &top); err != nil || top == nil {
		return nil, diag.Diagnostics{diag.Errorf(diag.ConfigParse, "", "the file is not a JSON object: %s", jsonProblem(err)).
			WithDetail("give heddle import an MCP host's server list: claude_desktop_config.json, .cursor/mcp.json, .mcp.json or .vscode/mcp.json")}
	}
	if raw, ok := top["mcp"]; ok && top["servers"] == nil { // VS Code's settings.json
		var inner map[string]json.RawMessage
		if json.Unmarshal(raw, &inner) != nil {
			return nil, diag.Diagnostics{diag.Errorf(diag.ConfigValueInvalid, "mcp", "mcp is not an object")}
		}
		top = inner
	}
	im := &imported{Servers: map[string]*importedServer{}, Secrets: []importedSecret{}, Notes: []string{}}
	inputs, ds := readInputs(top["inputs"])
	names := map[string]string{} // heddle name → the host's
	found := false
	for _, section := range []string{"mcpServers", "servers"} {
		raw, ok := top[section]
		if !ok {
			continue
		}
		found = true
		var entries map[string]json.RawMessage
		if err := json.Unmarshal(raw, &entries); err != nil {
			ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, section, "%s is not an object of servers", section))
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(entries)) {
			ds = append(ds, im.server(section, name, entries[name], inputs, names)...)
		}
	}
	if !found {
		ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, "", "the file has no mcpServers or servers object").
			WithDetail("heddle import reads Claude Desktop's and Cursor's {\"mcpServers\": {…}} and VS Code's {\"servers\": {…}}"))
	}
	if ds.HasErrors() {
		return nil, ds
	}
	return im, nil
}

// readInputs returns VS Code's inputs by id, with their descriptions.
func readInputs(raw json.RawMessage) (map[string]string, diag.Diagnostics) {
	inputs := map[string]string{}
	if raw == nil {
		return inputs, nil
	}
	var list []struct {
		ID          string `json:"id"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return inputs, diag.Diagnostics{diag.Errorf(diag.ConfigValueInvalid, "inputs", "inputs is not a list of {id, description}")}
	}
	for _, in := range list {
		inputs[in.ID] = in.Description
	}
	return inputs, nil
}

// hostEntry is one server as the host writes it, each setting checked for
// its type.
type hostEntry struct {
	path   string
	fields map[string]json.RawMessage
	ds     diag.Diagnostics
}

func (h *hostEntry) str(key string) string {
	var s string
	if raw, ok := h.fields[key]; ok && string(raw) != "null" && json.Unmarshal(raw, &s) != nil {
		h.ds = append(h.ds, diag.Errorf(diag.ConfigValueInvalid, config.Join(h.path, key), "%s is not a string", key))
	}
	return s
}

func (h *hostEntry) list(key string) []string {
	var l []string
	if raw, ok := h.fields[key]; ok && string(raw) != "null" && json.Unmarshal(raw, &l) != nil {
		h.ds = append(h.ds, diag.Errorf(diag.ConfigValueInvalid, config.Join(h.path, key), "%s is not a list of strings", key))
	}
	return l
}

func (h *hostEntry) dict(key string) map[string]string {
	var m map[string]string
	if raw, ok := h.fields[key]; ok && string(raw) != "null" && json.Unmarshal(raw, &m) != nil {
		h.ds = append(h.ds, diag.Errorf(diag.ConfigValueInvalid, config.Join(h.path, key), "%s is not an object of strings", key))
	}
	return m
}

// note records a note on the entry for stderr.
func (im *imported) note(format string, args ...any) {
	im.Notes = append(im.Notes, fmt.Sprintf(format, args...))
}

// server converts the host's entry name of section into im.Servers.
func (im *imported) server(section, name string, raw json.RawMessage, inputs map[string]string, names map[string]string) diag.Diagnostics {
	p := config.Join(section, name)
	h := &hostEntry{path: p}
	if err := json.Unmarshal(raw, &h.fields); err != nil || h.fields == nil {
		return diag.Diagnostics{diag.Errorf(diag.ConfigValueInvalid, p, "the server's entry is not an object")}
	}
	if strings.TrimSpace(name) == "" {
		return diag.Diagnostics{diag.Errorf(diag.ConfigValueInvalid, p, "a server with an empty name").WithDetail("give the server a name of letters, digits, _ and -")}
	}
	hname := toolname.Sanitize(name)
	if other, clash := names[hname]; clash {
		return diag.Diagnostics{diag.Errorf(diag.MCPConnectionConflict, p, "servers %s and %s both become %s", diag.Quote(other), diag.Quote(name), hname).
			WithDetail("rename one of them in the host's file: heddle's server names are letters, digits, _ and -")}
	}
	names[hname] = name
	if hname != name {
		im.note("server %s is named %s: heddle's server names are letters, digits, _ and - (the prefix of its tools)", diag.Quote(name), hname)
	}
	var disabled bool
	if raw, ok := h.fields["disabled"]; ok && json.Unmarshal(raw, &disabled) == nil && disabled {
		im.note("%s: left out: the host has it disabled", hname)
		return nil
	}
	var ignored []string
	for _, k := range slices.Sorted(maps.Keys(h.fields)) {
		if !slices.Contains(hostKeys, k) {
			ignored = append(ignored, show(k))
		}
	}
	if len(ignored) > 0 {
		im.note("%s: left out: %s (heddle's grants and policies decide what runs)", hname, strings.Join(ignored, ", "))
	}
	s := &importedServer{}
	kind := h.str("type")
	if t := h.str("transport"); kind == "" {
		kind = t
	}
	s.Command, s.Args, s.Dir = h.str("command"), h.list("args"), h.str("cwd")
	env := h.dict("env")
	s.URL = h.str("url")
	if s.URL == "" {
		s.URL = h.str("serverUrl") // Windsurf's
	}
	headers := h.dict("headers")
	if h.ds.HasErrors() {
		return h.ds
	}
	transport, ds := im.transport(s, kind, hname, p)
	if ds != nil {
		return ds
	}
	c := &converter{im: im, server: hname, path: p, inputs: inputs}
	if transport == mcpkind.TransportStdio {
		c.leftOut(map[string]bool{"url": s.URL != "", "headers": len(headers) > 0})
		s.URL = ""
		s.Command = c.plain("command", s.Command)
		for i, a := range s.Args {
			s.Args[i] = c.plain("args["+strconv.Itoa(i)+"]", a)
		}
		c.credentialArgs(s.Args)
		s.Dir = c.plain("cwd", s.Dir)
		s.Env = c.values("env", env, false)
	} else {
		c.leftOut(map[string]bool{"command": s.Command != "", "args": len(s.Args) > 0, "env": len(env) > 0, "cwd": s.Dir != ""})
		s.Command, s.Args, s.Dir = "", nil, ""
		s.Headers = c.values("headers", headers, true)
		var authRef string
		if s.URL, authRef = c.url(s.URL, s.Headers); authRef != "" {
			if s.Headers == nil {
				s.Headers = map[string]string{}
			}
			s.Headers["Authorization"] = authRef
		}
	}
	if c.ds.HasErrors() {
		return c.ds
	}
	im.Servers[hname] = s
	return nil
}

// transport settles the transport of s, whose host wrote kind as its type
// (or none): the one it is written with, s.Transport (set when the host
// wrote one, or for a url ending in /sse), and the diagnostics of an entry
// that has none.
func (im *imported) transport(s *importedServer, kind, hname, p string) (string, diag.Diagnostics) {
	if kind != "" {
		t, ok := hostTransports[kind]
		if !ok {
			return "", diag.Diagnostics{diag.Errorf(diag.MCPTransportInvalid, config.Join(p, "type"), "unknown type %s: want stdio, http (streamable-http) or sse", diag.Quote(kind))}
		}
		s.Transport = t
	}
	switch t := s.Transport; {
	case t == "" && s.Command != "" && s.URL != "":
		return "", diag.Diagnostics{diag.Errorf(diag.MCPConnectionConflict, p, "the server has both command and url").WithDetail("keep the one that says where the server is, or write type")}
	case t == "" && s.Command == "" && s.URL == "":
		return "", diag.Diagnostics{diag.Errorf(diag.MCPTransportInvalid, p, "the server has neither command nor url")}
	case t == "" && s.Command != "":
		return mcpkind.TransportStdio, nil
	case t == "":
		if u, err := url.Parse(s.URL); err == nil && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/sse") {
			s.Transport = mcpkind.TransportSSE
			im.note("%s: its url ends in /sse: written transport: sse (the legacy HTTP+SSE transport); write http if it serves Streamable HTTP there", hname)
			return mcpkind.TransportSSE, nil
		}
		return mcpkind.TransportHTTP, nil
	case t == mcpkind.TransportStdio && s.Command == "":
		return "", diag.Diagnostics{diag.Errorf(diag.MCPTransportInvalid, config.Join(p, "command"), "a stdio server needs a command")}
	case t != mcpkind.TransportStdio && s.URL == "":
		return "", diag.Diagnostics{diag.Errorf(diag.MCPTransportInvalid, config.Join(p, "url"), "a %s server needs a url", t)}
	}
	return s.Transport, nil
}

// converter turns one server's values into heddle's, recording secrets and
// notes on im.
type converter struct {
	im     *imported
	server string // heddle's name
	path   string // the entry's in the host's file
	inputs map[string]string
	ds     diag.Diagnostics
}

// leftOut notes settings of the other transport, which are dropped.
func (c *converter) leftOut(set map[string]bool) {
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if set[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		c.im.note("%s: left out: %s, which its transport does not use", c.server, strings.Join(keys, ", "))
	}
}

// secret records that the value called what goes to the secret store and
// returns the reference written in its place.
func (c *converter) secret(what, name string) string {
	p := "/mcp/" + c.server + "/" + toolname.Sanitize(name)
	c.im.Secrets = append(c.im.Secrets, importedSecret{Server: c.server, What: what, Path: p})
	return "${secrets:" + p + "}"
}

// values converts env (headers false) or headers (true): references stay,
// credentials become secret references, plain values stay as written.
func (c *converter) values(key string, in map[string]string, headers bool) map[string]string {
	if len(in) == 0 {
		return nil
	}
	kind := "env"
	if headers {
		kind = "header"
	}
	out := make(map[string]string, len(in))
	for _, name := range slices.Sorted(maps.Keys(in)) {
		v := in[name]
		what := kind + " " + show(name)
		refName := name
		if headers {
			refName = http.CanonicalHeaderKey(name)
		}
		switch ids := inputIDs(v); {
		case len(ids) > 0:
			out[name] = c.secret(c.inputWhat(what, v, ids), refName)
		case strings.HasPrefix(strings.TrimSpace(v), "${") && config.ParseRef(v).Problem == "":
			out[name] = v // already a reference heddle reads (VS Code's ${env:NAME} is one)
		case credential(name) || auth.HasUserinfo(v):
			out[name] = c.secret(what, refName)
		default:
			out[name] = v
			if strings.Contains(v, "${") {
				c.im.note("%s: %s.%s holds a variable heddle does not expand: replace it", c.server, key, show(name))
			} else if p := config.ParseEnvValue(v).Problem; !headers && p != "" {
				c.im.note("%s: heddle check refuses %s.%s: %s (value redacted)", c.server, key, show(name), p)
			}
		}
	}
	return out
}

// inputWhat names a value VS Code builds from inputs: the value of one,
// with a scheme before it (Bearer ${input:token}), or built from several.
func (c *converter) inputWhat(what, v string, ids []string) string {
	var descs []string
	for _, id := range ids {
		d := "input " + show(id)
		if desc := c.inputs[id]; desc != "" {
			d += " (" + diag.Quote(desc) + ")"
		}
		descs = append(descs, d)
	}
	if len(ids) == 1 {
		if m := inputValueRE.FindStringSubmatch(strings.TrimSpace(v)); m != nil {
			if m[1] != "" {
				return what + ": " + m[1] + " and the value of " + descs[0]
			}
			return what + ": the value of " + descs[0]
		}
	}
	return what + ": the value VS Code builds from " + strings.Join(descs, ", ")
}

// inputValueRE is a value that is one input, after a scheme or not.
var inputValueRE = regexp.MustCompile(`^(?:(Bearer|Basic|Token|token|bearer) +)?\$\{input:[^{}]*\}$`)

// inputIDs returns the ids of the VS Code inputs v uses.
func inputIDs(v string) []string {
	var ids []string
	for _, m := range inputRE.FindAllStringSubmatch(v, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// show is a name as written when it is letters, digits, _, - and ., and
// quoted (and clipped) otherwise, so that a note stays on its line.
func show(name string) string {
	if toolname.Valid(strings.ReplaceAll(name, ".", "_")) {
		return name
	}
	return diag.Quote(name)
}

// credential reports whether a value under name is a credential: an
// environment variable's or setting's name (auth.CredentialName), or a
// header that carries one (mcpkind.CredentialHeader).
func credential(name string) bool {
	return auth.CredentialName(name) || mcpkind.CredentialHeader(name)
}

// plain converts a setting heddle takes as written (command, an argument,
// the directory): a URL's userinfo is removed, and a variable the host
// would expand is noted.
func (c *converter) plain(key, v string) string {
	if auth.HasUserinfo(v) {
		stripped, ok := withoutUserinfo(v)
		if !ok {
			c.ds = append(c.ds, diag.Errorf(diag.MCPCredentialsInline, config.Join(c.path, key),
				"the value is a URL that carries credentials in its userinfo and does not parse (value redacted)"))
			return ""
		}
		c.im.note("%s: %s: a URL's credentials (userinfo) were removed; give them to the server another way, such as env with a secret reference", c.server, key)
		v = stripped
	}
	if strings.Contains(v, "${") {
		c.im.note("%s: %s holds a variable heddle does not expand: replace it", c.server, key)
	}
	return v
}

// credentialArgs refuses an argument that carries a credential: the value
// of --token=VALUE or of --api-key VALUE. heddle passes arguments as
// written, so no reference can stand in for it.
func (c *converter) credentialArgs(args []string) {
	for i, a := range args {
		flag, value, eq := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || !credential(flag) {
			continue
		}
		at := i
		if !eq {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
				continue
			}
			at, value = i+1, args[i+1]
		}
		if value == "" || strings.Contains(value, "${") {
			continue
		}
		c.ds = append(c.ds, diag.Errorf(diag.MCPCredentialsInline, config.Item(config.Join(c.path, "args"), at),
			"argument --%s carries a credential (value redacted); heddle passes arguments as written, so no reference can stand in for it", show(flag)).
			WithDetail("give the server the credential through env (a secret reference), if it reads one there, and import again"))
	}
}

// url removes the userinfo of a server's url. The credentials become an
// Authorization header referring to a secret (returned as auth), unless
// the entry sets one already.
func (c *converter) url(v string, headers map[string]string) (u, authRef string) {
	v = strings.TrimSpace(v)
	if !auth.HasUserinfo(v) {
		return c.plain("url", v), ""
	}
	stripped, ok := withoutUserinfo(v)
	if !ok {
		c.ds = append(c.ds, diag.Errorf(diag.MCPCredentialsInline, config.Join(c.path, "url"),
			"the url carries credentials in its userinfo and does not parse (value redacted)"))
		return "", ""
	}
	for name := range headers {
		if http.CanonicalHeaderKey(name) == "Authorization" {
			c.im.note("%s: the url's credentials (userinfo) were removed; its Authorization header stands for them", c.server)
			return stripped, ""
		}
	}
	return stripped, c.secret("the url's userinfo, as an Authorization value (Basic and the base64 of user:password)", "Authorization")
}

// withoutUserinfo returns the URL s without its userinfo.
func withoutUserinfo(s string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return "", false
	}
	u.User = nil
	return u.String(), true
}

// jsonProblem describes a JSON error without quoting the input.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return "it is null"
	case errors.As(err, &se):
		return fmt.Sprintf("a syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("its top level is a JSON %s", te.Value)
	}
	return "it does not parse"
}

// stripJSONC is data as standard JSON: VS Code's mcp.json may hold
// comments and trailing commas (JWCC), which hujson removes. Data it cannot
// read is returned as it is, for the JSON decoder to refuse.
func stripJSONC(data []byte) []byte {
	std, err := hujson.Standardize(slices.Clone(data))
	if err != nil {
		return data
	}
	return std
}
