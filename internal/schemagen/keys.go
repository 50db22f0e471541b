package schemagen

import (
	"encoding"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
)

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// keyOf is the key a struct field is decoded from (its koanf tag), or ""
// for a field that decodes no key of its own.
func keyOf(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("koanf"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	return name
}

// remain reports whether f holds the keys its struct does not decode.
func remain(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("koanf"), ",")
	return strings.Contains(","+opts+",", ",remain,")
}

// walk calls fn on s and on every schema within it, outside definitions.
func walk(s *jsonschema.Schema, fn func(*jsonschema.Schema)) {
	if s == nil || s == jsonschema.TrueSchema || s == jsonschema.FalseSchema {
		return
	}
	fn(s)
	if s.Properties != nil {
		for _, p := range s.Properties.FromOldest() {
			walk(p, fn)
		}
	}
	for _, p := range s.PatternProperties {
		walk(p, fn)
	}
	walk(s.AdditionalProperties, fn)
	walk(s.PropertyNames, fn)
	walk(s.Items, fn)
	walk(s.Not, fn)
	for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for _, sub := range list {
			walk(sub, fn)
		}
	}
}

// nullable is s, or null: the loader drops a key whose value is null, so
// that an overlay can remove what a lower layer set.
func nullable(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil || s == jsonschema.TrueSchema || s == jsonschema.FalseSchema {
		return s
	}
	desc := s.Description
	s.Description = ""
	return &jsonschema.Schema{Description: desc, AnyOf: []*jsonschema.Schema{s, {Type: "null"}}}
}

// nullValues makes every value of a mapping within s nullable: properties,
// pattern properties and additional properties. List items stay as they
// are.
func nullValues(s *jsonschema.Schema) {
	if s == nil || s == jsonschema.TrueSchema || s == jsonschema.FalseSchema {
		return
	}
	if s.Properties != nil {
		for key, p := range s.Properties.FromOldest() {
			nullValues(p)
			s.Properties.Set(key, nullable(p))
		}
	}
	for key, p := range s.PatternProperties {
		nullValues(p)
		s.PatternProperties[key] = nullable(p)
	}
	if s.AdditionalProperties != nil {
		nullValues(s.AdditionalProperties)
		s.AdditionalProperties = nullable(s.AdditionalProperties)
	}
	nullValues(s.Items)
	for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for _, sub := range list {
			nullValues(sub)
		}
	}
}
