package modelfmt

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/heddlehq/heddle/diag"
)

// maxCallBytes bounds one tool call as ParseCall reads it: the model's
// arguments for a tool are not expected to be larger than a request the
// invoke API takes.
const maxCallBytes = 4 << 20

// Call is one tool call a model asked for, as runtime.Toolset.Call takes
// it.
type Call struct {
	// ID is the API's identifier of the call, which its result must
	// name: Anthropic's tool_use id, OpenAI's tool_calls[].id or call_id.
	// Gemini's functionCall carries one only on some models; it may be "".
	ID string
	// Name is the tool's name, as the renderer wrote it.
	Name string
	// Args are the arguments: a JSON object, never nil.
	Args map[string]any
}

// ParseCall reads one tool call as the format's API returns it:
//
//   - Anthropic: a tool_use content block, {"type": "tool_use", "id",
//     "name", "input": {...}};
//   - OpenAI Chat Completions: one element of a message's tool_calls,
//     {"id", "type": "function", "function": {"name", "arguments": "<JSON
//     text>"}};
//   - OpenAI Responses: a function_call output item, {"type":
//     "function_call", "call_id", "name", "arguments": "<JSON text>"};
//   - Gemini: a part holding a functionCall, {"functionCall": {"name",
//     "args": {...}}}, or the functionCall object itself.
//
// For a tool rendered in strict mode, a null the model sent for a
// property that the tool's own schema does not require is removed, at
// every level, as if the model had left it out. A call that is not of the
// format's shape, or whose arguments are not a JSON object, is an error
// carrying TOOL_ARGS_INVALID. The name is not checked against the tools:
// Toolset.Call refuses one it does not know.
func (r *Renderer) ParseCall(data []byte) (Call, error) {
	if len(data) > maxCallBytes {
		return Call{}, diag.New(diag.ToolArgsInvalid, "the %s tool call is larger than %d bytes", r.format, maxCallBytes)
	}
	var c Call
	var args json.RawMessage
	var err error
	switch r.format {
	case Anthropic:
		var b struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}
		err = json.Unmarshal(data, &b)
		if err == nil && b.Type != "" && b.Type != "tool_use" {
			return Call{}, diag.New(diag.ToolArgsInvalid, "an %s tool call is a tool_use block, not %q", r.format, b.Type)
		}
		c, args = Call{ID: b.ID, Name: b.Name}, b.Input
	case OpenAIChat:
		var b struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function *struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		}
		err = json.Unmarshal(data, &b)
		if err == nil && b.Function == nil {
			return Call{}, diag.New(diag.ToolArgsInvalid, "an %s tool call has a function object", r.format)
		}
		if err == nil {
			c, args = Call{ID: b.ID, Name: b.Function.Name}, json.RawMessage(b.Function.Arguments)
		}
	case OpenAIResponses:
		var b struct {
			Type      string `json:"type"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}
		err = json.Unmarshal(data, &b)
		if err == nil && b.Type != "" && b.Type != "function_call" {
			return Call{}, diag.New(diag.ToolArgsInvalid, "an %s tool call is a function_call item, not %q", r.format, b.Type)
		}
		c, args = Call{ID: b.CallID, Name: b.Name}, json.RawMessage(b.Arguments)
	case Gemini:
		type functionCall struct {
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		}
		var b struct {
			FunctionCall *functionCall `json:"functionCall"`
			functionCall
		}
		err = json.Unmarshal(data, &b)
		fc := b.functionCall
		if b.FunctionCall != nil {
			fc = *b.FunctionCall
		}
		c, args = Call{ID: fc.ID, Name: fc.Name}, fc.Args
	}
	if err != nil {
		return Call{}, diag.Wrap(diag.ToolArgsInvalid, err, "the %s tool call is not JSON of its shape", r.format)
	}
	if c.Name == "" {
		return Call{}, diag.New(diag.ToolArgsInvalid, "the %s tool call names no tool", r.format)
	}
	if c.Args, err = decodeArgs(args); err != nil {
		return Call{}, diag.Wrap(diag.ToolArgsInvalid, err, "the arguments of the %s call of %s are not a JSON object", r.format, c.Name)
	}
	if t, ok := r.byName[c.Name]; ok && t.strict {
		denull(c.Args, t.schema, 0)
	}
	return c, nil
}

// decodeArgs reads arguments: a JSON object, or nothing (no arguments).
func decodeArgs(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// denull removes from an object the nulls strict mode made the model send
// for the optional properties it had no value for: a property whose value
// is null and which the schema does not require. It goes down into the
// properties and array items the schema describes, as far as the schema
// was rendered.
func denull(v any, schema map[string]any, depth int) {
	if depth > maxDepth || schema == nil {
		return
	}
	switch val := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		if props == nil {
			// An anyOf of objects: the first branch that describes one.
			if list, ok := schema["anyOf"].([]any); ok {
				for _, b := range list {
					if bm, ok := b.(map[string]any); ok && bm["properties"] != nil {
						denull(val, bm, depth+1)
						return
					}
				}
			}
			return
		}
		req := required(schema)
		for name, pv := range val {
			ps, _ := props[name].(map[string]any)
			if pv == nil && ps != nil && !slices.Contains(req, name) {
				delete(val, name)
				continue
			}
			denull(pv, ps, depth+1)
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		for _, e := range val {
			denull(e, items, depth+1)
		}
	}
}
