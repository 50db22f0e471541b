package modelfmt_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"google.golang.org/genai"
)

// The checkers below write each provider's documented subset of JSON
// Schema as a test, with the documentation each rule comes from. They
// check what heddle renders; the providers' SDK types (sdk_test.go) check
// that the SDKs read it.

// toolName is the name rule of every API: Anthropic's tool names
// (^[a-zA-Z0-9_-]{1,64}$, Messages API reference, tools.name), OpenAI's
// function names ("a-z, A-Z, 0-9, underscores and dashes, maximum length
// of 64", Chat Completions reference, functions.name) and, within
// Gemini's wider rule (letters, digits, underscores, dots, colons and
// dashes, up to 64; FunctionDeclaration.name), the runtime's own names.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// checkObjectRoot: Anthropic's input_schema and OpenAI's parameters are
// an object schema ("input_schema: JSON schema for this tool's input",
// with type "object", Messages API reference; OpenAI: "parameters ... a
// JSON Schema object"), and neither takes a combinator at the top (the
// APIs' errors "input_schema does not support oneOf, allOf, or anyOf at
// the top level" and OpenAI's "schema must be a JSON Schema of 'type:
// \"object\"'" — remembered from their error messages, not from a page).
func checkObjectRoot(s map[string]any) []string {
	var errs []string
	if s["type"] != "object" {
		errs = append(errs, fmt.Sprintf("top: type %v, want object", s["type"]))
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf", "enum", "not"} {
		if _, ok := s[k]; ok {
			errs = append(errs, "top: "+k+" at the top level")
		}
	}
	return errs
}

// strictKeywords are the keywords OpenAI's strict mode supports (guide
// "Structured Outputs", "Supported schemas": types string, number,
// boolean, integer, object, array, enum and anyOf; string pattern and
// format; number multipleOf, maximum, exclusiveMaximum, minimum,
// exclusiveMinimum; array minItems and maxItems; plus descriptions,
// definitions and const).
var strictKeywords = []string{"type", "description", "title", "properties", "required", "additionalProperties",
	"items", "enum", "const", "anyOf", "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum",
	"minimum", "exclusiveMinimum", "minItems", "maxItems", "$defs", "$ref"}

// checkStrict: OpenAI strict mode ("Structured Outputs", "Supported
// schemas"): the root is an object, not anyOf; every object sets
// additionalProperties: false and lists every property in required
// ("All fields must be required"; an optional field is a union with
// null); only the supported keywords; at most 10 levels of nesting.
func checkStrict(s map[string]any) []string {
	errs := checkObjectRoot(s)
	var walk func(path string, v any, depth int)
	walk = func(path string, v any, depth int) {
		m, ok := v.(map[string]any)
		if !ok {
			errs = append(errs, path+": not a schema object")
			return
		}
		if depth > 10 {
			errs = append(errs, path+": deeper than 10 levels")
		}
		for k := range m {
			if !slices.Contains(strictKeywords, k) {
				errs = append(errs, path+": keyword "+k+" is not supported in strict mode")
			}
		}
		_, hasType := m["type"]
		_, hasAny := m["anyOf"]
		_, hasEnum := m["enum"]
		_, hasConst := m["const"]
		if !hasType && !hasAny && !hasEnum && !hasConst {
			errs = append(errs, path+": no type, anyOf, enum or const")
		}
		if typeIs(m, "object") {
			if m["additionalProperties"] != false {
				errs = append(errs, path+": additionalProperties is not false")
			}
			props, _ := m["properties"].(map[string]any)
			req := stringsOf(m["required"])
			names := sortedNames(props)
			sort.Strings(req)
			if !slices.Equal(names, req) {
				errs = append(errs, fmt.Sprintf("%s: required %v, want every property %v", path, req, names))
			}
			for _, n := range names {
				walk(path+".properties."+n, props[n], depth+1)
			}
		}
		if typeIs(m, "array") {
			walk(path+".items", m["items"], depth+1)
		}
		if list, ok := m["anyOf"].([]any); ok {
			for i, b := range list {
				walk(fmt.Sprintf("%s.anyOf[%d]", path, i), b, depth)
			}
		}
	}
	walk("", s, 1)
	return errs
}

// geminiTypes are the values of Gemini's Schema.type (Gemini API
// reference, "Type"; genai.Type).
var geminiTypes = []string{"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}

// checkGemini: Gemini's function parameters are a Schema object, "a select
// subset of an OpenAPI 3.0 schema object" (Gemini API reference,
// FunctionDeclaration.parameters, and genai.Schema). Decoding into
// genai.Schema with unknown fields refused proves no keyword outside the
// subset is written ($ref, $defs, oneOf, allOf, const,
// additionalProperties, exclusiveMinimum, ...); then: a type is one of
// genai's; enum only on STRING or INTEGER with format enum (genai.Schema's
// comment); an ARRAY has items; an OBJECT has properties (the API's error
// "should be non-empty for OBJECT type"); required names only properties
// that are there.
func checkGemini(raw []byte) []string {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	var s genai.Schema
	if err := d.Decode(&s); err != nil {
		return []string{"not a genai.Schema: " + err.Error()}
	}
	var errs []string
	var walk func(path string, s *genai.Schema)
	walk = func(path string, s *genai.Schema) {
		if s == nil {
			errs = append(errs, path+": null schema")
			return
		}
		if s.Type != "" && !slices.Contains(geminiTypes, string(s.Type)) {
			errs = append(errs, fmt.Sprintf("%s: type %q", path, s.Type))
		}
		if len(s.Enum) > 0 && (s.Format != "enum" || (s.Type != genai.TypeString && s.Type != genai.TypeInteger)) {
			errs = append(errs, fmt.Sprintf("%s: enum on type %q format %q", path, s.Type, s.Format))
		}
		if s.Type == genai.TypeArray && s.Items == nil {
			errs = append(errs, path+": ARRAY without items")
		}
		if s.Type == genai.TypeObject && len(s.Properties) == 0 {
			errs = append(errs, path+": OBJECT without properties")
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				errs = append(errs, path+": required names "+r+", which is not a property")
			}
		}
		for _, n := range sortedSchemas(s.Properties) {
			walk(path+".properties."+n, s.Properties[n])
		}
		if s.Items != nil {
			walk(path+".items", s.Items)
		}
		for i, b := range s.AnyOf {
			walk(fmt.Sprintf("%s.anyOf[%d]", path, i), b)
		}
	}
	walk("", &s)
	return errs
}

func typeIs(m map[string]any, t string) bool {
	switch v := m["type"].(type) {
	case string:
		return v == t
	case []any:
		return slices.Contains(v, any(t))
	}
	return false
}

func stringsOf(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func sortedNames(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedSchemas(m map[string]*genai.Schema) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func joinErrs(errs []string) string { return strings.Join(errs, "\n\t") }
