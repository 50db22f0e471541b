package modelfmt

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
)

// Format is a model API's way of writing tools, their calls and their
// results.
type Format string

// The formats, as `heddle tools --format` and `?format=` name them.
const (
	// Anthropic is the Messages API: tools {name, description,
	// input_schema}, tool_use blocks, tool_result blocks.
	Anthropic Format = "anthropic"
	// OpenAIChat is the Chat Completions API: tools of type function,
	// tool_calls, messages of role tool.
	OpenAIChat Format = "openai-chat"
	// OpenAIResponses is the Responses API: tools of type function,
	// function_call items, function_call_output items.
	OpenAIResponses Format = "openai-responses"
	// Gemini is the Gemini API: functionDeclarations, functionCall parts,
	// functionResponse parts.
	Gemini Format = "gemini"
)

// Formats returns every format, in the order help lists them.
func Formats() []Format {
	return []Format{Anthropic, OpenAIChat, OpenAIResponses, Gemini}
}

// ParseFormat returns the format called s. An unknown name is an error
// carrying REQUEST_INVALID.
func ParseFormat(s string) (Format, error) {
	f := Format(s)
	if slices.Contains(Formats(), f) {
		return f, nil
	}
	names := make([]string, 0, 4)
	for _, f := range Formats() {
		names = append(names, string(f))
	}
	return "", diag.New(diag.RequestInvalid, "unknown tool format %q: the formats are %s", s, strings.Join(names, ", "))
}

// Strictable reports whether the format has a strict mode: the two OpenAI
// APIs.
func (f Format) Strictable() bool { return f == OpenAIChat || f == OpenAIResponses }

// Options are the choices of a rendering. The zero value renders each
// provider's default.
type Options struct {
	// Strict renders OpenAI tools in strict mode (function calling with
	// Structured Outputs): every property required, the optional ones
	// nullable, additionalProperties false on every object, strict: true.
	// A tool whose schema strict mode cannot express is rendered with
	// strict: false. The nulls a model then sends for the optional
	// properties it leaves out are removed again by ParseCall. Only
	// OpenAIChat and OpenAIResponses take it.
	Strict bool
}

// Renderer writes one toolset's tools in one format, and reads that
// format's tool calls back and writes their results. It holds a copy of
// the tools it was made with, and is safe for concurrent use.
type Renderer struct {
	format Format
	opts   Options
	tools  []tool
	byName map[string]*tool
}

// tool is one tool as it is rendered.
type tool struct {
	rt     runtime.Tool
	schema map[string]any // the input schema, $ref inlined: what denull walks
	strict bool           // rendered strict: its calls carry nulls to remove
	def    any            // the tool's entry of the tools array
}

// New renders tools (as runtime.Toolset.Tools returns them) in format. It
// fails, with REQUEST_INVALID, for a format it does not know, or Strict
// with a format other than the OpenAI ones; no schema makes it fail.
func New(format Format, tools []runtime.Tool, opts Options) (*Renderer, error) {
	if _, err := ParseFormat(string(format)); err != nil {
		return nil, err
	}
	if opts.Strict && !format.Strictable() {
		return nil, diag.New(diag.RequestInvalid, "strict mode is a choice of the OpenAI formats (%s, %s), not of %s", OpenAIChat, OpenAIResponses, format)
	}
	r := &Renderer{format: format, opts: opts, tools: make([]tool, len(tools)), byName: make(map[string]*tool, len(tools))}
	for i, t := range tools {
		r.tools[i] = r.render(t)
		r.byName[t.Name] = &r.tools[i]
	}
	return r, nil
}

// Format returns the renderer's format.
func (r *Renderer) Format() Format { return r.format }

// Tools returns the tools as the JSON array that the format's API takes as
// its tools parameter: for Gemini, one Tool object holding every function
// declaration, [{"functionDeclarations": [...]}].
func (r *Renderer) Tools() json.RawMessage {
	defs := make([]any, len(r.tools))
	for i, t := range r.tools {
		defs[i] = t.def
	}
	var v any = defs
	if r.format == Gemini {
		v = []geminiTool{{FunctionDeclarations: defs}}
	}
	b, err := marshal(v)
	if err != nil {
		// Every value is JSON decoded from JSON, strings and maps.
		return json.RawMessage("[]")
	}
	return b
}

// marshal writes v as JSON without escaping <, > and &: a description
// reads as its server wrote it.
func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Render is New and Tools in one: the tools array of format.
func Render(format Format, tools []runtime.Tool, opts Options) (json.RawMessage, error) {
	r, err := New(format, tools, opts)
	if err != nil {
		return nil, err
	}
	return r.Tools(), nil
}

type anthropicTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	InputSchema map[string]any `json:"input_schema"`
}

type openAIFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
	Strict      bool           `json:"strict"`
}

type openAIChatTool struct {
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

type openAIResponsesTool struct {
	Type string `json:"type"`
	openAIFunction
}

type geminiTool struct {
	FunctionDeclarations []any `json:"functionDeclarations"`
}

type geminiFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

// render writes one tool.
func (r *Renderer) render(t runtime.Tool) tool {
	src := decodeSchema(t.InputSchema)
	if src == nil {
		src = map[string]any{"type": "object"}
	}
	inlined, cut := copySchema(src, true)
	out := tool{rt: t, schema: inlined}
	switch r.format {
	case Anthropic:
		out.def = anthropicTool{Name: t.Name, Description: t.Description, InputSchema: r.passThrough(src)}
	case OpenAIChat, OpenAIResponses:
		fn := openAIFunction{Name: t.Name, Description: t.Description}
		if r.opts.Strict && !cut {
			if s, ok := strictSchema(objectRoot(inlined)); ok {
				fn.Parameters, fn.Strict = s, true
			}
		}
		if !fn.Strict {
			fn.Parameters = r.passThrough(src)
		}
		out.strict = fn.Strict
		if r.format == OpenAIChat {
			out.def = openAIChatTool{Type: "function", Function: fn}
		} else {
			out.def = openAIResponsesTool{Type: "function", openAIFunction: fn}
		}
	case Gemini:
		fn := geminiFunction{Name: t.Name, Description: t.Description}
		params := geminiSchema(objectRoot(inlined))
		if props, _ := params["properties"].(map[string]any); len(props) > 0 {
			params["type"] = "OBJECT"
			fn.Parameters = params
		}
		out.def = fn
	}
	return out
}

// passThrough is the rendering of the APIs that take JSON Schema as it is
// (Anthropic; OpenAI without strict mode): the schema within the bounds,
// $ref and $defs kept, meta keywords dropped, and an object at the top.
func (r *Renderer) passThrough(src map[string]any) map[string]any {
	root := src
	if ref, ok := src["$ref"].(string); ok {
		// A schema that is one $ref at the top ($ref to its own $defs, as
		// some generators write) is the definition, with the $defs kept.
		if target, ok := resolve(src, ref); ok {
			if tm, ok := target.(map[string]any); ok && ref != "#" {
				root = maps.Clone(tm)
				for k, v := range src {
					if k != "$ref" {
						root[k] = v
					}
				}
			}
		}
	}
	copied, _ := copySchema(root, false)
	return objectRoot(copied)
}
