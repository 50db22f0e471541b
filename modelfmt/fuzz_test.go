package modelfmt_test

import (
	"encoding/json"
	"testing"

	"github.com/heddlehq/heddle/modelfmt"
	"github.com/heddlehq/heddle/runtime"
)

// FuzzRender: whatever JSON a server sends as a tool's input schema, every
// rendering finishes within its bounds, never panics, writes JSON, and
// writes a schema in its provider's subset.
func FuzzRender(f *testing.F) {
	for _, s := range corpus {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}}`))
	f.Add([]byte(`{"properties": {"a": {"$ref": "#/properties/a"}}}`))
	f.Add([]byte(`{"type": ["object", "null"], "properties": {"x": {"type": [], "enum": []}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, schema []byte) {
		tools := []runtime.Tool{{Name: "t", InputSchema: json.RawMessage(schema)}}
		for _, r := range renderings {
			raw, err := modelfmt.Render(r.format, tools, r.opts)
			if err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
			if len(raw) > maxRendered {
				t.Fatalf("%s: %d bytes", r.name, len(raw))
			}
			if !json.Valid(raw) {
				t.Fatalf("%s: not JSON: %.300s", r.name, raw)
			}
			checkRendered(t, r.format, raw)
		}
	})
}

// FuzzParseCall: any bytes given as a tool call are a call or a coded
// error, never a panic.
func FuzzParseCall(f *testing.F) {
	f.Add(`{"type": "tool_use", "id": "x", "name": "search_runbooks", "input": {"query": null, "filter": {"since": null}}}`)
	f.Add(`{"id": "x", "type": "function", "function": {"name": "search_runbooks", "arguments": "{\"limit\": null}"}}`)
	f.Add(`{"type": "function_call", "call_id": "x", "name": "search_runbooks", "arguments": "{\"filter\": [null]}"}`)
	f.Add(`{"functionCall": {"name": "search_runbooks", "args": {"filter": null}}}`)
	renderers := make([]*modelfmt.Renderer, 0, len(renderings))
	for _, r := range renderings {
		rr, err := modelfmt.New(r.format, []runtime.Tool{searchTool}, r.opts)
		if err != nil {
			f.Fatal(err)
		}
		renderers = append(renderers, rr)
	}
	f.Fuzz(func(t *testing.T, data string) {
		for _, r := range renderers {
			c, err := r.ParseCall([]byte(data))
			if err == nil && (c.Name == "" || c.Args == nil) {
				t.Fatalf("%s: call %+v without a name or arguments", r.Format(), c)
			}
		}
	})
}
