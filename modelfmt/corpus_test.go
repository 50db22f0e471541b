package modelfmt_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/modelfmt"
	"github.com/heddlehq/heddle/runtime"
)

// corpus is a schema of each shape the normalisations must handle. Each
// is rendered in every format and checked against that provider's subset.
var corpus = map[string]string{
	"flat": `{"type": "object", "properties": {"q": {"type": "string", "minLength": 1, "maxLength": 100},
		"limit": {"type": "integer", "minimum": 1, "default": 10}}, "required": ["q"]}`,
	"nested objects": `{"type": "object", "properties": {"filter": {"type": "object", "properties": {
		"since": {"type": "string", "format": "date-time"},
		"tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}}, "required": ["since"]}}}`,
	"arrays of objects": `{"type": "object", "properties": {"lines": {"type": "array", "minItems": 1, "items": {
		"type": "object", "properties": {"id": {"type": "string"}, "qty": {"type": "number"}}, "required": ["id"]}}}}`,
	"enums": `{"type": "object", "properties": {"level": {"type": "string", "enum": ["low", "high"]},
		"code": {"type": "integer", "enum": [1, 2, 3]}, "mixed": {"enum": ["a", 1, null]}}, "required": ["level"]}`,
	"oneOf": `{"type": "object", "properties": {"target": {"oneOf": [{"type": "string"},
		{"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}]}}}`,
	"$ref": `{"type": "object", "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}},
		"properties": {"from": {"$ref": "#/$defs/point"}, "to": {"$ref": "#/$defs/point", "description": "where it ends"}}, "required": ["from", "to"]}`,
	"recursive": `{"type": "object", "$defs": {"node": {"type": "object", "properties": {"name": {"type": "string"},
		"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "properties": {"tree": {"$ref": "#/$defs/node"}}}`,
	"recursive root": `{"type": "object", "properties": {"value": {"type": "string"}, "next": {"$ref": "#"}}}`,
	"formats": `{"type": "object", "properties": {"when": {"type": "string", "format": "date"}, "ip": {"type": "string", "format": "ipv4"},
		"site": {"type": "string", "format": "uri"}, "ratio": {"type": "number", "format": "float"}}}`,
	"type lists": `{"type": "object", "properties": {"a": {"type": ["string", "null"]}, "b": {"type": ["string", "integer"]}}}`,
	"top-level oneOf": `{"oneOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
		{"type": "object", "properties": {"b": {"type": "string"}}}]}`,
	"top-level allOf": `{"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
		{"properties": {"b": {"type": "boolean"}}, "required": ["b"]}]}`,
	"root $ref":    `{"$ref": "#/$defs/args", "$defs": {"args": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}}`,
	"map":          `{"type": "object", "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}}}`,
	"allOf inside": `{"type": "object", "properties": {"p": {"allOf": [{"type": "string"}, {"minLength": 2}]}}}`,
	"empty":        `{}`,
	"no arguments": `{"type": "object"}`,
	"draft-07": `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
		"definitions": {"x": {"type": "string", "pattern": "^[a-z]+$"}}, "properties": {"x": {"$ref": "#/definitions/x"}},
		"additionalProperties": false}`,
	"tuple":        `{"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]}}}`,
	"const":        `{"type": "object", "properties": {"kind": {"const": "fixed"}, "n": {"const": 3}}}`,
	"untyped":      `{"type": "object", "properties": {"anything": {}, "described": {"description": "any value"}}}`,
	"unresolvable": `{"type": "object", "properties": {"x": {"$ref": "https://example.com/schema.json"}, "y": {"$ref": "#/nowhere"}}}`,
	"bool schemas": `{"type": "object", "properties": {"yes": true, "no": false}, "additionalProperties": true}`,
	"not a schema": `{"type": "object", "properties": "nope", "required": "x", "items": 3}`,
	"deep":         deep(40),
	"doubling":     doubling(24),
}

// deep is an object schema nested n levels.
func deep(n int) string {
	s := `{"type": "string"}`
	for range n {
		s = `{"type": "object", "properties": {"a": ` + s + `}, "required": ["a"]}`
	}
	return s
}

// doubling is a schema whose $ref inlining doubles at each of n levels:
// 2^n schemas if nothing bounded it.
func doubling(n int) string {
	var defs []string
	for i := range n {
		defs = append(defs, fmt.Sprintf(`"d%d": {"type": "object", "properties": {"l": {"$ref": "#/$defs/d%d"}, "r": {"$ref": "#/$defs/d%d"}}}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d": {"type": "string"}`, n))
	return `{"type": "object", "$defs": {` + strings.Join(defs, ", ") + `}, "properties": {"root": {"$ref": "#/$defs/d0"}}}`
}

// renderings are every format, and the OpenAI ones in strict mode too.
var renderings = []struct {
	name   string
	format modelfmt.Format
	opts   modelfmt.Options
}{
	{"anthropic", modelfmt.Anthropic, modelfmt.Options{}},
	{"openai-chat", modelfmt.OpenAIChat, modelfmt.Options{}},
	{"openai-chat strict", modelfmt.OpenAIChat, modelfmt.Options{Strict: true}},
	{"openai-responses", modelfmt.OpenAIResponses, modelfmt.Options{}},
	{"openai-responses strict", modelfmt.OpenAIResponses, modelfmt.Options{Strict: true}},
	{"gemini", modelfmt.Gemini, modelfmt.Options{}},
}

// maxRendered bounds one rendered tool: the doubling schema must stay
// within it.
const maxRendered = 4 << 20

// TestCorpus renders every corpus schema in every format and checks the
// result against the provider's subset (subset_test.go) and its SDK's
// types (sdk_test.go).
func TestCorpus(t *testing.T) {
	for name, schema := range corpus {
		tools := []runtime.Tool{{Name: "t", Description: "a tool", InputSchema: json.RawMessage(schema)}}
		for _, r := range renderings {
			t.Run(name+"/"+r.name, func(t *testing.T) {
				raw, err := modelfmt.Render(r.format, tools, r.opts)
				if err != nil {
					t.Fatal(err)
				}
				if len(raw) > maxRendered {
					t.Fatalf("rendered %d bytes, over %d", len(raw), maxRendered)
				}
				checkRendered(t, r.format, raw)
			})
		}
	}
}

// checkRendered checks a rendered tools array: the SDK reads it, and every
// tool's schema is in its provider's subset.
func checkRendered(t *testing.T, f modelfmt.Format, raw []byte) {
	t.Helper()
	decodeWithSDK(t, f, raw)
	for _, d := range definitions(t, f, raw) {
		if !toolName.MatchString(d.name) {
			t.Errorf("tool name %q does not fit the providers' rule", d.name)
		}
		var errs []string
		switch {
		case f == modelfmt.Gemini:
			if d.raw != nil {
				errs = checkGemini(d.raw)
			}
		case d.strict:
			errs = checkStrict(d.schema)
		default:
			errs = checkObjectRoot(d.schema)
		}
		if len(errs) > 0 {
			t.Errorf("tool %s (%s):\n\t%s\nschema: %s", d.name, f, joinErrs(errs), d.raw)
		}
	}
}

// definition is one rendered tool, read back generically.
type definition struct {
	name   string
	strict bool
	schema map[string]any // input_schema or parameters
	raw    json.RawMessage
}

func definitions(t *testing.T, f modelfmt.Format, raw []byte) []definition {
	t.Helper()
	var out []definition
	switch f {
	case modelfmt.Anthropic:
		var tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		mustUnmarshal(t, raw, &tools)
		for _, tl := range tools {
			out = append(out, definition{name: tl.Name, raw: tl.InputSchema})
		}
	case modelfmt.OpenAIChat:
		var tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
				Strict     bool            `json:"strict"`
			} `json:"function"`
		}
		mustUnmarshal(t, raw, &tools)
		for _, tl := range tools {
			out = append(out, definition{name: tl.Function.Name, strict: tl.Function.Strict, raw: tl.Function.Parameters})
		}
	case modelfmt.OpenAIResponses:
		var tools []struct {
			Type       string          `json:"type"`
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
			Strict     bool            `json:"strict"`
		}
		mustUnmarshal(t, raw, &tools)
		for _, tl := range tools {
			out = append(out, definition{name: tl.Name, strict: tl.Strict, raw: tl.Parameters})
		}
	case modelfmt.Gemini:
		var tools []struct {
			FunctionDeclarations []struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"functionDeclarations"`
		}
		mustUnmarshal(t, raw, &tools)
		if len(tools) != 1 {
			t.Fatalf("gemini: %d Tool objects, want 1", len(tools))
		}
		for _, fd := range tools[0].FunctionDeclarations {
			out = append(out, definition{name: fd.Name, raw: fd.Parameters})
		}
	}
	for i := range out {
		if out[i].raw != nil {
			mustUnmarshal(t, out[i].raw, &out[i].schema)
		}
	}
	return out
}

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v in %.300s", err, b)
	}
}

// TestNormalisation holds what the normalisations promise of particular
// shapes, beyond the subsets.
func TestNormalisation(t *testing.T) {
	render := func(t *testing.T, schema string, f modelfmt.Format, opts modelfmt.Options) definition {
		t.Helper()
		raw, err := modelfmt.Render(f, []runtime.Tool{{Name: "t", InputSchema: json.RawMessage(schema)}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return definitions(t, f, raw)[0]
	}
	strict := modelfmt.Options{Strict: true}
	t.Run("strict makes optional properties required and nullable", func(t *testing.T) {
		d := render(t, corpus["flat"], modelfmt.OpenAIChat, strict)
		if !d.strict {
			t.Fatalf("flat schema not rendered strict: %s", d.raw)
		}
		limit := d.schema["properties"].(map[string]any)["limit"].(map[string]any)
		if !typeIs(limit, "null") || !typeIs(limit, "integer") {
			t.Errorf("optional limit = %v, want integer or null", limit)
		}
		q := d.schema["properties"].(map[string]any)["q"].(map[string]any)
		if typeIs(q, "null") {
			t.Errorf("required q = %v, became nullable", q)
		}
		if !strings.Contains(q["description"].(string), "minLength: 1") {
			t.Errorf("q's minLength not moved into its description: %v", q)
		}
	})
	t.Run("strict turns oneOf into anyOf", func(t *testing.T) {
		d := render(t, corpus["oneOf"], modelfmt.OpenAIResponses, strict)
		target := d.schema["properties"].(map[string]any)["target"].(map[string]any)
		if !d.strict || target["anyOf"] == nil || target["oneOf"] != nil {
			t.Errorf("strict %v, target = %v", d.strict, target)
		}
	})
	for _, name := range []string{"recursive", "recursive root", "map", "tuple", "untyped", "allOf inside", "deep"} {
		t.Run("strict falls back for "+name, func(t *testing.T) {
			if d := render(t, corpus[name], modelfmt.OpenAIChat, strict); d.strict {
				t.Errorf("rendered strict: %s", d.raw)
			}
		})
	}
	t.Run("$ref inlined for Gemini and strict, kept otherwise", func(t *testing.T) {
		for _, f := range []modelfmt.Format{modelfmt.Gemini, modelfmt.OpenAIChat} {
			opts := modelfmt.Options{Strict: f == modelfmt.OpenAIChat}
			d := render(t, corpus["$ref"], f, opts)
			if strings.Contains(string(d.raw), "$ref") || strings.Contains(string(d.raw), "$defs") {
				t.Errorf("%s: $ref left: %s", f, d.raw)
			}
			if !strings.Contains(string(d.raw), "where it ends") {
				t.Errorf("%s: the description beside $ref is lost: %s", f, d.raw)
			}
		}
		if d := render(t, corpus["$ref"], modelfmt.Anthropic, modelfmt.Options{}); !strings.Contains(string(d.raw), `"$ref"`) {
			t.Errorf("anthropic: $ref not kept: %s", d.raw)
		}
	})
	t.Run("a top-level oneOf becomes one object of every property", func(t *testing.T) {
		d := render(t, corpus["top-level oneOf"], modelfmt.Anthropic, modelfmt.Options{})
		props := d.schema["properties"].(map[string]any)
		if props["a"] == nil || props["b"] == nil || d.schema["required"] != nil {
			t.Errorf("schema = %s", d.raw)
		}
		d = render(t, corpus["top-level allOf"], modelfmt.Anthropic, modelfmt.Options{})
		if got := stringsOf(d.schema["required"]); len(got) != 2 {
			t.Errorf("allOf's required lists not kept: %s", d.raw)
		}
	})
	t.Run("Gemini types, nullable and enums", func(t *testing.T) {
		d := render(t, corpus["type lists"], modelfmt.Gemini, modelfmt.Options{})
		props := d.schema["properties"].(map[string]any)
		a, b := props["a"].(map[string]any), props["b"].(map[string]any)
		if a["type"] != "STRING" || a["nullable"] != true {
			t.Errorf("a = %v, want STRING nullable", a)
		}
		if len(b["anyOf"].([]any)) != 2 {
			t.Errorf("b = %v, want anyOf of two types", b)
		}
		d = render(t, corpus["enums"], modelfmt.Gemini, modelfmt.Options{})
		code := d.schema["properties"].(map[string]any)["code"].(map[string]any)
		if code["type"] != "INTEGER" || code["format"] != "enum" || len(code["enum"].([]any)) != 3 {
			t.Errorf("code = %v, want an INTEGER enum of strings", code)
		}
	})
	t.Run("no arguments", func(t *testing.T) {
		if d := render(t, corpus["no arguments"], modelfmt.Gemini, modelfmt.Options{}); d.raw != nil {
			t.Errorf("gemini parameters of a tool without arguments = %s, want none", d.raw)
		}
		if d := render(t, corpus["no arguments"], modelfmt.OpenAIChat, strict); !d.strict {
			t.Errorf("a tool without arguments not strict: %s", d.raw)
		}
	})
}
