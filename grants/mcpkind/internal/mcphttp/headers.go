package mcphttp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/heddlehq/heddle/grants/mcpkind/internal/jsonmsg"
)

// What the standard headers of 2026-07-28 carry: the method of every
// request (Mcp-Method), the name of what tools/call, prompts/get and
// resources/read address (Mcp-Name), and, for a tool whose input schema
// marks properties with x-mcp-header, those arguments' values
// (Mcp-Param-<header>): strings as they are unless they need base64
// (=?base64?…?=), booleans as true or false, integers within ±(2^53−1) in
// decimal. The rules are the revision's (SEP-2243), as go-sdk's client
// applies them.

// metaVersionKey is where a request's _meta names its revision.
const metaVersionKey = "io.modelcontextprotocol/protocolVersion"

// readParams returns the revision a request's _meta names, or "".
func readParams(params []byte) (version string) {
	if !bytes.Contains(params, []byte(metaVersionKey)) {
		return ""
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if jsonmsg.Parse(params, &p) != nil {
		return ""
	}
	_ = jsonmsg.Parse(p.Meta[metaVersionKey], &version)
	return version
}

// named reports a method whose request names what it addresses.
func named(method string) bool {
	return method == "tools/call" || method == "prompts/get" || method == "resources/read"
}

// nameOf is what a request of method addresses: a tool's or prompt's name,
// a resource's URI.
func nameOf(method string, params []byte) string {
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	if jsonmsg.Parse(params, &p) != nil {
		return ""
	}
	if method == "resources/read" {
		return p.URI
	}
	return p.Name
}

// maxParamTools bounds the tools a connection keeps headers for.
const maxParamTools = 1 << 14

// paramTables holds, per tool, the arguments its calls carry in headers:
// what the latest tools/list result said.
type paramTables map[string][]binding

// binding is one argument (a path of property names) and its header.
type binding struct {
	path   []string
	header string
}

// schemaProp is what x-mcp-header needs of a schema.
type schemaProp struct {
	Type       string                `json:"type"`
	Header     json.RawMessage       `json:"x-mcp-header"`
	Properties map[string]schemaProp `json:"properties"`
}

// record reads a tools/list result for the tools' bindings. A tool whose
// annotations break the rules gets none: go-sdk's client leaves it out of
// the list it returns, so it is never called.
func (t *paramTables) record(result []byte) {
	if !bytes.Contains(result, []byte("x-mcp-header")) {
		return
	}
	var r struct {
		Tools []struct {
			Name        string     `json:"name"`
			InputSchema schemaProp `json:"inputSchema"`
		} `json:"tools"`
	}
	if jsonmsg.Parse(result, &r) != nil {
		return
	}
	if *t == nil || len(*t)+len(r.Tools) > maxParamTools {
		*t = make(paramTables)
	}
	for _, tool := range r.Tools {
		var bs []binding
		seen := map[string]bool{}
		if collect(tool.InputSchema.Properties, nil, seen, &bs) && len(bs) > 0 {
			(*t)[tool.Name] = bs
		} else {
			delete(*t, tool.Name)
		}
	}
}

// collect gathers the bindings of props, at any depth, into out; it
// reports false when one breaks the rules: x-mcp-header on a property that
// is not a string, integer or boolean, a name that is not an HTTP token,
// or one used twice (in any case).
func collect(props map[string]schemaProp, prefix []string, seen map[string]bool, out *[]binding) bool {
	for name, p := range props {
		path := append(append([]string(nil), prefix...), name)
		if p.Header != nil {
			var h string
			if json.Unmarshal(p.Header, &h) != nil || !token(h) || seen[strings.ToLower(h)] {
				return false
			}
			if p.Type != "string" && p.Type != "integer" && p.Type != "boolean" {
				return false
			}
			seen[strings.ToLower(h)] = true
			*out = append(*out, binding{path: path, header: h})
		}
		if len(p.Properties) > 0 && !collect(p.Properties, path, seen, out) {
			return false
		}
	}
	return true
}

// token reports a non-empty HTTP token (RFC 9110's tchar).
func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// paramHeaders returns the Mcp-Param-* headers (without the prefix) of a
// call with params of a tool with bindings bs, or nil.
func paramHeaders(bs []binding, params []byte) map[string]string {
	if len(bs) == 0 {
		return nil
	}
	var p struct {
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if jsonmsg.Parse(params, &p) != nil || p.Arguments == nil {
		return nil
	}
	out := make(map[string]string, len(bs))
	for _, b := range bs {
		raw, ok := lookup(p.Arguments, b.path)
		if !ok {
			continue
		}
		if v, ok := headerValue(raw); ok {
			out[b.header] = v
		}
	}
	return out
}

// lookup finds the argument at path.
func lookup(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	cur, ok := args[path[0]]
	for _, part := range path[1:] {
		if !ok {
			return nil, false
		}
		var obj map[string]json.RawMessage
		if jsonmsg.Parse(cur, &obj) != nil {
			return nil, false
		}
		cur, ok = obj[part]
	}
	return cur, ok
}

// maxSafe is the largest integer a double holds exactly.
const maxSafe = 1<<53 - 1

// headerValue is the header form of an argument: a string, a boolean or a
// safe integer; anything else (null among them) has none.
func headerValue(raw json.RawMessage) (string, bool) {
	var v any
	if jsonmsg.Parse(raw, &v) != nil {
		return "", false
	}
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case bool:
		s = strconv.FormatBool(v)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) || v < -maxSafe || v > maxSafe {
			return "", false
		}
		s = strconv.FormatInt(int64(v), 10)
	default:
		return "", false
	}
	if needsBase64(s) {
		s = "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
	}
	return s, true
}

// needsBase64 reports a string a header cannot carry as it is: one with a
// character outside printable ASCII, space or tab at either end, or the
// form of an encoded value.
func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")
}
