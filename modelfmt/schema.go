package modelfmt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The bounds of one tool's rendered schema. A schema is a server's input,
// so its rendering is bounded however it is written: $ref chains that
// double at every step, or nesting thousands deep, end at these bounds
// rather than in memory or stack.
const (
	// maxDepth is the deepest a rendered schema nests (schemas within
	// schemas); below it a schema is cut.
	maxDepth = 32
	// maxNodes is how many schemas one rendered schema holds, counting
	// those $ref inlining copies; past it, schemas are cut.
	maxNodes = 5000
	// maxSchemaBytes is the largest input schema, as JSON, that is read;
	// a larger one is rendered as an object that takes any arguments.
	maxSchemaBytes = 1 << 20
)

// cutNote is the description of a schema cut at a bound or at a recursion:
// it accepts any value, and says why.
const cutNote = "(schema cut by heddle: recursive, or past its bounds)"

// schemaMaps are the keywords whose value is a map of schemas.
var schemaMaps = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}

// schemaLists are the keywords whose value is a list of schemas.
var schemaLists = []string{"anyOf", "oneOf", "allOf", "prefixItems"}

// schemaOnes are the keywords whose value is one schema (or, for items and
// additionalProperties, a boolean; for items in older drafts, a list).
var schemaOnes = []string{"items", "additionalProperties", "not", "if", "then", "else", "contains",
	"propertyNames", "unevaluatedProperties", "unevaluatedItems", "additionalItems"}

// metaKeys are dropped from every rendering: they say nothing to a model.
var metaKeys = []string{"$schema", "$id", "$anchor", "$comment", "$dynamicAnchor", "$vocabulary"}

// decodeSchema returns the tool's input schema as JSON values (numbers as
// json.Number, so that none changes on the way), or nil when it is absent,
// too large, or not a JSON object.
func decodeSchema(schema any) map[string]any {
	var b []byte
	switch s := schema.(type) {
	case nil:
		return nil
	case json.RawMessage:
		b = s
	case []byte:
		b = s
	default:
		var err error
		if b, err = json.Marshal(schema); err != nil {
			return nil
		}
	}
	if len(b) > maxSchemaBytes {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil {
		return nil
	}
	return m
}

// walker copies a schema within the bounds, inlining $ref when inline is
// set. cut records whether anything was cut, so that a rendering which
// needs the whole schema (OpenAI's strict mode) can tell.
type walker struct {
	root   map[string]any
	inline bool
	nodes  int
	cut    bool
}

// copySchema returns a bounded copy of root: with $ref resolved and
// inlined (inline), or kept with the $defs they point to. Meta keywords
// are dropped. A $ref that recurses, that points outside the schema or
// that cannot be resolved, and a schema past the bounds, becomes a schema
// that accepts anything and says so.
func copySchema(root map[string]any, inline bool) (map[string]any, bool) {
	w := &walker{root: root, inline: inline}
	out, _ := w.node(root, 0, nil).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out, w.cut
}

func (w *walker) cutSchema() map[string]any {
	w.cut = true
	return map[string]any{"description": cutNote}
}

// node copies one schema (a map, or a boolean schema).
func (w *walker) node(v any, depth int, stack []string) any {
	m, ok := v.(map[string]any)
	if !ok {
		if b, ok := v.(bool); ok {
			return b
		}
		return w.cutSchema()
	}
	w.nodes++
	if depth > maxDepth || w.nodes > maxNodes {
		return w.cutSchema()
	}
	if ref, ok := m["$ref"].(string); ok && w.inline {
		if slices.Contains(stack, ref) {
			return w.cutSchema()
		}
		target, ok := resolve(w.root, ref)
		if !ok {
			return w.cutSchema()
		}
		inlined, ok := w.node(target, depth, append(stack, ref)).(map[string]any)
		if !ok {
			return w.cutSchema()
		}
		// Keywords beside a $ref apply too (2020-12); a description of
		// the use wins over the definition's.
		for k, val := range m {
			if k == "$ref" {
				continue
			}
			inlined[k] = w.value(k, val, depth, stack)
		}
		return inlined
	}
	out := make(map[string]any, len(m))
	for k, val := range m {
		if slices.Contains(metaKeys, k) || !keyword(k) {
			continue
		}
		if w.inline && (k == "$defs" || k == "definitions") {
			continue
		}
		out[k] = w.value(k, val, depth, stack)
	}
	return out
}

// value copies the value of keyword k: schemas within the bounds, other
// values as they are.
func (w *walker) value(k string, val any, depth int, stack []string) any {
	switch {
	case slices.Contains(schemaMaps, k):
		sub, ok := val.(map[string]any)
		if !ok {
			return val
		}
		out := make(map[string]any, len(sub))
		for _, name := range sortedKeys(sub) {
			out[name] = w.node(sub[name], depth+1, stack)
		}
		return out
	case slices.Contains(schemaLists, k) || (k == "items" && isList(val)):
		list, ok := val.([]any)
		if !ok {
			return val
		}
		out := make([]any, len(list))
		for i, s := range list {
			out[i] = w.node(s, depth+1, stack)
		}
		return out
	case slices.Contains(schemaOnes, k):
		return w.node(val, depth+1, stack)
	}
	return val
}

// resolve finds a local reference ("#", "#/$defs/name", any JSON pointer
// into the schema). References to other documents are not followed.
func resolve(root map[string]any, ref string) (any, bool) {
	if ref == "#" {
		return root, true
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil, false
	}
	var cur any = root
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// keyword reports whether k can be a keyword: a name of letters, digits
// and underscores, or one starting with $. Other keys of a schema ("",
// "a.b") are no keyword of any draft and say nothing to a model; they are
// dropped.
func keyword(k string) bool {
	k = strings.TrimPrefix(k, "$")
	if k == "" {
		return false
	}
	for i, r := range k {
		letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func isList(v any) bool {
	_, ok := v.([]any)
	return ok
}

func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

// types returns the schema's type keyword as a list: "string" and
// ["string", "null"] alike.
func types(m map[string]any) []string {
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// required returns the names a schema's required keyword lists.
func required(m map[string]any) []string {
	list, _ := m["required"].([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// note appends text about keywords a provider does not take to the
// schema's description: the model still reads the constraint, the
// provider's check does not.
func note(out map[string]any, moved map[string]any) {
	if len(moved) == 0 {
		return
	}
	parts := make([]string, 0, len(moved))
	for _, k := range sortedKeys(moved) {
		b, err := json.Marshal(moved[k])
		if err != nil {
			continue
		}
		if len(b) > 200 {
			b = append(b[:200:200], "…"...)
		}
		parts = append(parts, fmt.Sprintf("%s: %s", k, b))
	}
	text := "(" + strings.Join(parts, "; ") + ")"
	if d, _ := out["description"].(string); d != "" {
		text = d + " " + text
	}
	out["description"] = text
}

// objectRoot makes a copied schema fit what every provider asks of a
// tool's parameters: an object schema, with no anyOf, oneOf, allOf, enum
// or not at the top. The properties of the branches of a top-level
// combinator are merged into the object (those of allOf keep their
// required lists, those of anyOf and oneOf are optional), so that the
// model still sees every argument; the server checks which combination it
// accepts.
func objectRoot(m map[string]any) map[string]any {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]any{}
	}
	props, _ := out["properties"].(map[string]any)
	props = maps.Clone(props)
	if props == nil {
		props = map[string]any{}
	}
	req := required(out)
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		list, ok := out[k].([]any)
		delete(out, k)
		if !ok {
			continue
		}
		for _, b := range list {
			bm, _ := b.(map[string]any)
			if ref, ok := bm["$ref"].(string); ok {
				if target, ok := resolve(m, ref); ok {
					bm, _ = target.(map[string]any)
				}
			}
			bp, _ := bm["properties"].(map[string]any)
			for _, name := range sortedKeys(bp) {
				if _, ok := props[name]; !ok {
					props[name] = bp[name]
				}
			}
			if k == "allOf" {
				for _, r := range required(bm) {
					if !slices.Contains(req, r) {
						req = append(req, r)
					}
				}
			}
		}
	}
	delete(out, "enum")
	delete(out, "not")
	delete(out, "const")
	out["type"] = "object"
	out["properties"] = props
	if len(req) > 0 {
		list := make([]any, len(req))
		for i, r := range req {
			list[i] = r
		}
		out["required"] = list
	} else {
		delete(out, "required")
	}
	return out
}
