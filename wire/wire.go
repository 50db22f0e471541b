// Package wire holds the JSON shapes of a tool and of a call's result as
// heddle prints them to its callers: what the invoke API of package serve
// answers (GET /v1/agents/{agent}/tools, POST …/tools/{tool}) and what
// `heddle tools --format json` and `heddle call --format json` print. The
// HTTP API and the command print the same bytes because they print these
// types; their field names are a contract of both and never change.
//
//	tools, err := ts.Tools(ctx)
//	…
//	json.NewEncoder(w).Encode(wire.Tools(tools))
//
//	res, err := ts.Call(ctx, name, args)
//	…
//	json.NewEncoder(w).Encode(wire.Result(res))
//
// The package imports the runtime's types and go-sdk's, and no front door:
// the command prints them without the HTTP server, and serve answers them
// without the command.
package wire

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/runtime"
)

// Tool is one tool as the invoke API and `heddle tools --format json`
// list it.
type Tool struct {
	Name         string `json:"name"`
	Kind         string `json:"source"`
	Server       string `json:"server"`
	OriginalName string `json:"original_name"`
	Description  string `json:"description"`
	InputSchema  any    `json:"input_schema"`
	Destructive  bool   `json:"destructive"`
	ReadOnly     bool   `json:"read_only"`
	// Deferred marks, in `heddle tools`, a tool of a grant that says
	// defer: a conversation lists it once load_tools has loaded it.
	Deferred bool `json:"deferred,omitempty"`
	// ClassifiedBy says where Destructive and ReadOnly came from: server,
	// override or untrusted.
	ClassifiedBy string `json:"classified_by"`
	// Flags are what screening the tool's definition found:
	// hidden_unicode, instructions, shadowing (TOOL_DESCRIPTOR_SUSPICIOUS).
	Flags []string `json:"flags,omitempty"`
}

// Tools returns tools as the invoke API lists them.
func Tools(tools []runtime.Tool) []Tool {
	out := make([]Tool, len(tools))
	for i, t := range tools {
		out[i] = Tool{Name: t.Name, Kind: t.Kind, Server: t.Server, OriginalName: t.OriginalName,
			Description: t.Description, InputSchema: t.InputSchema, Destructive: t.Destructive, ReadOnly: t.ReadOnly, ClassifiedBy: string(t.ClassifiedBy), Deferred: t.Deferred,
			Flags: t.Flags}
	}
	return out
}

// Result is a result in MCP's own shape, with isError always present (the
// SDK leaves it out when false): what the invoke API answers and `heddle
// call --format json` prints. It is encoded once, its fields in the SDK's
// order, isError last; text keeps <, > and & as the tool wrote them, and
// numbers keep every digit.
func Result(res *mcp.CallToolResult) any {
	// The SDK's own encoder, called directly: its output is compact JSON
	// already, which json.Marshal would scan and copy once more.
	b, err := res.MarshalJSON()
	if err != nil || len(b) < 2 || b[len(b)-1] != '}' {
		return res
	}
	b = unescapeHTML(b)
	if res.IsError {
		return json.RawMessage(b)
	}
	b = b[:len(b)-1]
	if len(b) > 1 {
		b = append(b, ',')
	}
	return json.RawMessage(append(b, `"isError":false}`...))
}

// unescapeHTML undoes encoding/json's escaping of <, > and & in the
// strings of the JSON text b (the SDK's encoders escape them; the answer
// should read as the tool wrote it). It reads escapes pairwise, so that an
// escaped backslash followed by "u003c" stays as it is.
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, b[i], b[i+1]), i+1
	}
	return out
}
