package argcheck

import (
	"math"
	"reflect"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// maxDepth is the deepest nesting jsonNative follows; deeper arguments take
// the JSON round trip.
const maxDepth = 64

// jsonNative reports whether v is made only of the values encoding/json
// decodes into an any — nil, bool, finite float64, valid UTF-8 string, and
// non-nil []any and map[string]any of those — so that a JSON round trip
// would return an equal value. Skipping that round trip makes the echo
// tool's check 8× faster (BenchmarkCheck/echo: heddle against
// no-jsonNative).
func jsonNative(v any, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch v := v.(type) {
	case nil, bool:
		return true
	case string:
		return utf8.ValidString(v)
	case float64:
		return !math.IsNaN(v) && !math.IsInf(v, 0)
	case map[string]any:
		if v == nil {
			return false
		}
		for k, e := range v {
			if !utf8.ValidString(k) || !jsonNative(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		if v == nil {
			return false
		}
		for _, e := range v {
			if !jsonNative(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// plainSchema reports whether s uses only keywords quickValid decides
// exactly as jsonschema does — type (one name), properties, required, and
// additionalProperties true or false — besides annotations that validation
// ignores, and only such schemas under properties. $schema may name a
// supported draft at the root.
func plainSchema(s *jsonschema.Schema, root bool) bool {
	if s == nil {
		return false
	}
	switch s.Type {
	case "", "null", "boolean", "string", "integer", "number", "object", "array":
	default:
		return false
	}
	for _, sub := range s.Properties {
		if !plainSchema(sub, false) {
			return false
		}
	}
	if ap := s.AdditionalProperties; ap != nil && !reflect.DeepEqual(*ap, jsonschema.Schema{}) &&
		!reflect.DeepEqual(*ap, jsonschema.Schema{Not: &jsonschema.Schema{}}) {
		return false
	}
	rest := *s
	rest.Type, rest.Properties, rest.Required, rest.AdditionalProperties = "", nil, nil, nil
	rest.Title, rest.Description, rest.Comment, rest.Default, rest.Examples = "", "", "", nil, nil
	rest.Deprecated, rest.ReadOnly, rest.WriteOnly, rest.Format, rest.PropertyOrder = false, false, false, "", nil
	switch rest.Schema {
	case "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema":
		if root {
			rest.Schema = ""
		}
	}
	return reflect.DeepEqual(rest, jsonschema.Schema{})
}

// quickValid reports whether v, a value of the types encoding/json decodes
// into an any, conforms to s, a schema plainSchema accepts. It follows
// jsonschema's rules: integers are whole numbers, "number" includes them, and
// the object keywords apply to objects only. Standing in for the validator,
// it makes the echo tool's check 10× faster (BenchmarkCheck/echo: heddle
// against no-quickValid).
func quickValid(s *jsonschema.Schema, v any) bool {
	if s.Type != "" && !hasType(v, s.Type) {
		return false
	}
	obj, ok := v.(map[string]any)
	return !ok || objectValid(s, obj)
}

// hasType reports whether v is of the JSON type named want; an integer is a
// number too.
func hasType(v any, want string) bool {
	got := jsonType(v)
	return got == want || got == "integer" && want == "number"
}

// jsonType names the JSON type of v, a value of the types encoding/json
// decodes into an any: "integer" for a whole number, "number" for any other.
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if _, frac := math.Modf(v); frac == 0 {
			return "integer"
		}
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return ""
}

// objectValid reports whether obj conforms to the object keywords of s:
// properties, required, and additionalProperties false.
func objectValid(s *jsonschema.Schema, obj map[string]any) bool {
	for name, sub := range s.Properties {
		if pv, present := obj[name]; present && !quickValid(sub, pv) {
			return false
		}
	}
	for _, name := range s.Required {
		if _, present := obj[name]; !present {
			return false
		}
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Not != nil {
		for name := range obj {
			if _, declared := s.Properties[name]; !declared {
				return false
			}
		}
	}
	return true
}
