package argcheck

import (
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// BenchmarkCheck checks valid arguments four ways in the same run: as
// Check does (heddle: both shortcuts), without one shortcut or the other
// (no-jsonNative: a JSON round trip every time; no-quickValid: jsonschema's
// validator every time), and as the library alone would (library: a round
// trip and the validator). Inputs: the echo tool's
// inferred schema, a typed tool's with four fields and a nested object, and
// a schema with keywords quickValid leaves to the validator.
func BenchmarkCheck(b *testing.B) {
	type echoIn struct {
		Text string `json:"text" jsonschema:"the text to echo back"`
	}
	type typedIn struct {
		Query string  `json:"query" jsonschema:"what to search for"`
		Limit int     `json:"limit,omitempty"`
		Score float64 `json:"min_score"`
		Exact bool    `json:"exact"`
		Scope struct {
			Team string `json:"team"`
		} `json:"scope"`
	}
	echo, err := jsonschema.For[echoIn](nil)
	if err != nil {
		b.Fatal(err)
	}
	typed, err := jsonschema.For[typedIn](nil)
	if err != nil {
		b.Fatal(err)
	}
	bounded := map[string]any{"type": "object", "required": []any{"query"}, "additionalProperties": false, "properties": map[string]any{
		"query": map[string]any{"type": "string", "minLength": 1, "maxLength": 200},
		"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 100},
	}}
	for _, c := range []struct {
		name   string
		schema any
		args   map[string]any
	}{
		{"echo", echo, map[string]any{"text": "hello, heddle"}},
		{"typed", typed, map[string]any{"query": "disk full", "limit": 20.0, "min_score": 0.5, "exact": false, "scope": map[string]any{"team": "sre"}}},
		{"bounded", bounded, map[string]any{"query": "disk full", "limit": 20.0}},
	} {
		chk := Compile(c.schema)
		if chk == nil || chk.Check(c.args) != "" {
			b.Fatalf("%s: the arguments do not conform", c.name)
		}
		for _, side := range []struct {
			name          string
			native, quick bool
		}{
			{"heddle", true, true},
			{"no-jsonNative", false, true},
			{"no-quickValid", true, false},
			{"library", false, false},
		} {
			b.Run(c.name+"/"+side.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if msg := chk.check(c.args, side.native, side.quick); msg != "" {
						b.Fatal(msg)
					}
				}
			})
		}
	}
}
