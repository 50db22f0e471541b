package modelfmt

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// Gemini's function declarations take their parameters as a Schema object:
// a subset of the OpenAPI 3.0 Schema Object (Gemini API reference,
// "Schema"; the fields of google.golang.org/genai's Schema type). Types
// are written in capitals (STRING, NUMBER, INTEGER, BOOLEAN, ARRAY,
// OBJECT); null is said with nullable; enum holds strings; there is no
// $ref, oneOf, allOf, const or additionalProperties.

// jsonTypes are JSON Schema's types other than null, each one of Gemini's.
var jsonTypes = []string{"string", "number", "integer", "boolean", "array", "object"}

// geminiKeys are the keywords Gemini's Schema has and that are copied as
// they are (type, properties, items, anyOf, enum and format are rewritten).
var geminiKeys = []string{"description", "title", "pattern", "default", "example"}

// geminiCounts are Gemini's Schema keywords that hold an integer.
var geminiCounts = []string{"minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"}

// geminiFormats are the formats Gemini's Schema documents, by type.
var geminiFormats = map[string][]string{
	"NUMBER":  {"float", "double"},
	"INTEGER": {"int32", "int64"},
	"STRING":  {"enum", "date-time", "date", "email", "byte", "password"},
}

// geminiSchema returns the Gemini form of an inlined schema.
func geminiSchema(m map[string]any) map[string]any {
	out := map[string]any{}
	moved := map[string]any{}
	nullable := m["nullable"] == true
	var ts []string
	for _, t := range types(m) {
		switch {
		case t == "null":
			nullable = true
		case slices.Contains(jsonTypes, t) && !slices.Contains(ts, strings.ToUpper(t)):
			ts = append(ts, strings.ToUpper(t))
		default:
			moved["type"] = m["type"] // no type of JSON Schema
		}
	}
	enum, enumOK := m["enum"].([]any)
	if c, ok := m["const"]; ok && !enumOK {
		enum, enumOK = []any{c}, true
	}
	if enumOK {
		strs, ok := enumStrings(enum, ts)
		switch {
		case ok && len(strs) > 0:
			out["enum"] = strs
			if slices.Contains(enum, nil) {
				nullable = true
			}
			if len(ts) == 0 {
				ts = []string{"STRING"}
			}
		default:
			moved["enum"] = enum
		}
	}
	if len(ts) == 0 {
		switch {
		case m["properties"] != nil:
			ts = []string{"OBJECT"}
		case m["items"] != nil:
			ts = []string{"ARRAY"}
		}
	}
	if len(ts) > 1 {
		// Several types: one anyOf branch for each, as OpenAPI 3.0 has no
		// type list.
		branches := make([]any, 0, len(ts))
		for _, t := range ts {
			b := maps.Clone(m)
			b["type"] = strings.ToLower(t)
			delete(b, "description")
			branches = append(branches, geminiSchema(b))
		}
		out["anyOf"] = branches
		ts = nil
	}
	if len(ts) == 1 {
		out["type"] = ts[0]
	}
	for k, v := range m {
		switch {
		case k == "type" || k == "enum" || k == "const" || k == "nullable" || k == "required":
		case k == "properties":
			props, _ := v.(map[string]any)
			sp := make(map[string]any, len(props))
			for _, name := range sortedKeys(props) {
				if pm, ok := props[name].(map[string]any); ok {
					sp[name] = geminiSchema(pm)
				} else {
					sp[name] = map[string]any{"description": cutNote}
				}
			}
			if len(sp) > 0 {
				out["properties"] = sp
			}
		case k == "items":
			if im, ok := v.(map[string]any); ok {
				out["items"] = geminiSchema(im)
			} else {
				moved[k] = v
			}
		case k == "anyOf" || k == "oneOf":
			list, _ := v.([]any)
			branches := make([]any, 0, len(list))
			for _, b := range list {
				if bm, ok := b.(map[string]any); ok {
					branches = append(branches, geminiSchema(bm))
				}
			}
			if len(branches) > 0 && out["anyOf"] == nil {
				out["anyOf"] = branches
			}
		case k == "format":
			if s, _ := v.(string); len(ts) == 1 && slices.Contains(geminiFormats[ts[0]], s) {
				out[k] = s
			} else {
				moved[k] = v
			}
		case k == "minimum" || k == "maximum":
			if _, ok := number(v); ok {
				out[k] = v
			} else {
				moved[k] = v
			}
		case slices.Contains(geminiCounts, k):
			if n, ok := number(v); ok && n >= 0 && n == float64(int64(n)) {
				out[k] = int64(n)
			} else {
				moved[k] = v
			}
		case k == "description" || k == "title" || k == "pattern":
			if s, ok := v.(string); ok {
				out[k] = s
			}
		case slices.Contains(geminiKeys, k):
			out[k] = v
		case k == "examples":
			if list, ok := v.([]any); ok && len(list) > 0 {
				out["example"] = list[0]
			}
		case k == "additionalProperties" && v == false:
			// Gemini's objects take only the properties they declare.
		case k == "$defs" || k == "definitions":
		default:
			moved[k] = v
		}
	}
	if r := required(m); out["properties"] != nil && len(r) > 0 {
		props := out["properties"].(map[string]any)
		var keep []any
		for _, name := range r {
			if _, ok := props[name]; ok {
				keep = append(keep, name)
			}
		}
		if len(keep) > 0 {
			out["required"] = keep
		}
	}
	if out["type"] == "ARRAY" && out["items"] == nil {
		out["items"] = map[string]any{}
	}
	if out["type"] == "OBJECT" && out["properties"] == nil {
		// Gemini refuses an OBJECT without properties ("should be non-empty
		// for OBJECT type"): an object of any keys is left untyped.
		delete(out, "type")
		moved["type"] = "object"
	}
	if out["enum"] != nil {
		if f, ok := out["format"]; ok && f != "enum" {
			moved["format"] = f
		}
		out["format"] = "enum"
	}
	if nullable {
		out["nullable"] = true
	}
	note(out, moved)
	return out
}

// enumStrings returns an enum as Gemini takes it: strings. An enum of
// integers is written as their decimal strings on an INTEGER (Gemini's own
// example: apartment numbers); any other enum is not taken.
func enumStrings(enum []any, ts []string) ([]string, bool) {
	var out []string
	for _, e := range enum {
		switch v := e.(type) {
		case nil:
		case string:
			out = append(out, v)
		case json.Number:
			if !slices.Contains(ts, "INTEGER") {
				return nil, false
			}
			if _, err := v.Int64(); err != nil {
				return nil, false
			}
			out = append(out, v.String())
		default:
			return nil, false
		}
	}
	return out, true
}

// number reads a JSON number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}
