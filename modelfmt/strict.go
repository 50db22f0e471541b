package modelfmt

import (
	"slices"
)

// OpenAI's strict mode (Structured Outputs) takes a subset of JSON Schema.
// The rules here are those of OpenAI's guide "Structured Outputs",
// section "Supported schemas", which function calling with strict: true
// shares: every object lists all its properties as required and sets
// additionalProperties to false; an optional field is written as one that
// may be null; the keywords below are supported; at most 10 levels of
// nesting, 5000 properties and 1000 enum values in all.
const (
	strictMaxDepth      = 10
	strictMaxProperties = 5000
	strictMaxEnum       = 1000
)

// strictKeys are the keywords strict mode supports (once $ref is inlined).
var strictKeys = []string{"type", "description", "title", "properties", "required", "additionalProperties",
	"items", "enum", "const", "anyOf", "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum",
	"minimum", "exclusiveMinimum", "minItems", "maxItems"}

// strictFormats are the string formats strict mode supports.
var strictFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}

// strictBlockers are keywords that change what a value may be in a way
// strict mode cannot express: a schema with one is not rendered strict.
var strictBlockers = []string{"allOf", "not", "if", "then", "else", "patternProperties", "prefixItems",
	"dependentSchemas", "dependentRequired", "unevaluatedProperties", "unevaluatedItems", "contains",
	"propertyNames", "additionalItems"}

// strictState counts what strict mode bounds across one schema.
type strictState struct {
	properties int
	enums      int
}

// strictSchema returns the strict-mode form of an inlined schema, or false
// when the schema cannot be written in strict mode's subset: a schema that
// accepts any value or any object keys, a recursive schema (cut when
// inlined), a tuple, allOf or not, or one past strict mode's bounds. A
// tool with such a schema is rendered with strict: false.
func strictSchema(m map[string]any) (map[string]any, bool) {
	st := &strictState{}
	out, ok := st.node(m, 1)
	return out, ok
}

func (st *strictState) node(m map[string]any, depth int) (map[string]any, bool) {
	if depth > strictMaxDepth {
		return nil, false
	}
	for _, k := range strictBlockers {
		if _, ok := m[k]; ok {
			return nil, false
		}
	}
	out := map[string]any{}
	moved := map[string]any{}
	for k, v := range m {
		switch {
		case k == "oneOf":
			// oneOf is not supported; anyOf is, and to a model they say
			// the same.
			out["anyOf"] = v
		case k == "format":
			if s, _ := v.(string); slices.Contains(strictFormats, s) {
				out[k] = v
			} else {
				moved[k] = v
			}
		case slices.Contains(strictKeys, k):
			out[k] = v
		case k == "$ref" || k == "$defs" || k == "definitions":
			return nil, false // not inlined: cut or unresolvable
		default:
			moved[k] = v
		}
	}
	ts := types(out)
	if e, ok := out["enum"].([]any); ok {
		st.enums += len(e)
	}
	if st.enums > strictMaxEnum {
		return nil, false
	}
	if list, ok := out["anyOf"].([]any); ok {
		branches := make([]any, 0, len(list))
		for _, b := range list {
			bm, ok := b.(map[string]any)
			if !ok {
				return nil, false
			}
			sb, ok := st.node(bm, depth)
			if !ok {
				return nil, false
			}
			branches = append(branches, sb)
		}
		out["anyOf"] = branches
	} else if len(ts) == 0 && out["enum"] == nil && out["const"] == nil {
		switch {
		case out["properties"] != nil:
			ts = []string{"object"}
		case out["items"] != nil:
			ts = []string{"array"}
		default:
			return nil, false // any value
		}
		out["type"] = "object"
		if ts[0] == "array" {
			out["type"] = "array"
		}
	}
	if slices.Contains(ts, "object") {
		if !st.object(out, depth) {
			return nil, false
		}
	}
	if slices.Contains(ts, "array") {
		items, ok := out["items"].(map[string]any)
		if !ok {
			return nil, false // no items, or a tuple
		}
		si, ok := st.node(items, depth+1)
		if !ok {
			return nil, false
		}
		out["items"] = si
	}
	note(out, moved)
	return out, true
}

// object makes one object schema strict: every property required, the
// optional ones nullable, additionalProperties false.
func (st *strictState) object(out map[string]any, depth int) bool {
	if ap, ok := out["additionalProperties"]; ok && ap != false {
		return false // a map: strict mode has no way to say it
	}
	props, _ := out["properties"].(map[string]any)
	if len(props) == 0 && depth > 1 {
		return false // an object of any keys
	}
	st.properties += len(props)
	if st.properties > strictMaxProperties {
		return false
	}
	req := required(out)
	names := sortedKeys(props)
	sp := make(map[string]any, len(props))
	for _, name := range names {
		pm, ok := props[name].(map[string]any)
		if !ok {
			return false
		}
		s, ok := st.node(pm, depth+1)
		if !ok {
			return false
		}
		if !slices.Contains(req, name) {
			s = nullable(s)
		}
		sp[name] = s
	}
	all := make([]any, len(names))
	for i, n := range names {
		all[i] = n
	}
	out["properties"] = sp
	out["required"] = all
	out["additionalProperties"] = false
	return true
}

// nullable returns s widened to also accept null: "null" added to its
// type (and null to its enum), or a null branch added to its anyOf.
func nullable(s map[string]any) map[string]any {
	if list, ok := s["anyOf"].([]any); ok {
		for _, b := range list {
			if bm, ok := b.(map[string]any); ok && slices.Contains(types(bm), "null") {
				return s
			}
		}
		s["anyOf"] = append(slices.Clone(list), map[string]any{"type": "null"})
		return s
	}
	ts := types(s)
	if len(ts) == 0 {
		// an enum or a const alone: wrap it.
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	}
	if !slices.Contains(ts, "null") {
		list := make([]any, 0, len(ts)+1)
		for _, t := range ts {
			list = append(list, t)
		}
		s["type"] = append(list, "null")
	}
	if e, ok := s["enum"].([]any); ok && !slices.Contains(e, nil) {
		s["enum"] = append(slices.Clone(e), nil)
	}
	return s
}
