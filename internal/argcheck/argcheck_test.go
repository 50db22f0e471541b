package argcheck

// Tests that the shortcuts decide exactly as the slow paths they skip
// (see docs/performance.md): quickValid as jsonschema's validator,
// jsonNative as a JSON round trip.

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/jsonrand"
)

// randSchema returns a random schema of the kind plainSchema accepts (and,
// one time in eight, one it does not).
func randSchema(r *rand.Rand, depth int) map[string]any {
	s := map[string]any{}
	types := []string{"", "null", "boolean", "string", "integer", "number", "object", "array"}
	if t := types[r.IntN(len(types))]; t != "" {
		s["type"] = t
	}
	if depth < 3 && r.IntN(2) == 0 {
		props := map[string]any{}
		for _, name := range []string{"a", "b", "c"}[:1+r.IntN(3)] {
			props[name] = randSchema(r, depth+1)
		}
		s["properties"] = props
	}
	if r.IntN(2) == 0 {
		s["required"] = []string{"a", "b", "d"}[:r.IntN(3)]
	}
	switch r.IntN(4) {
	case 0:
		s["additionalProperties"] = false
	case 1:
		s["additionalProperties"] = true
	}
	if r.IntN(3) == 0 {
		s["description"] = "d"
	}
	if depth == 0 && r.IntN(4) == 0 {
		s["$schema"] = "http://json-schema.org/draft-07/schema#"
	}
	if r.IntN(8) == 0 {
		s["minLength"] = 2 // not plain
	}
	return s
}

func TestQuickValidAgreesWithValidator(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	plain, agreedValid, agreedInvalid := 0, 0, 0
	for range 3000 {
		raw, _ := json.Marshal(randSchema(r, 0))
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			continue
		}
		if !plainSchema(&s, true) {
			if strings.Contains(string(raw), "minLength") {
				continue
			}
			t.Fatalf("plainSchema(%s) = false", raw)
		}
		plain++
		for range 20 {
			v := any(jsonrand.Object(r, 0))
			if r.IntN(4) == 0 {
				v = jsonrand.Value(r, 0)
			}
			quick, full := quickValid(&s, v), rs.Validate(v) == nil
			if quick != full {
				t.Fatalf("schema %s, instance %#v: quickValid %v, validator %v", raw, v, quick, full)
			}
			if quick {
				agreedValid++
			} else {
				agreedInvalid++
			}
		}
	}
	t.Logf("%d plain schemas; agreed on %d valid and %d invalid instances", plain, agreedValid, agreedInvalid)
}

// TestPlainSchemaOfSDKTools checks that the schemas go-sdk infers for typed
// tools take the quick path, and that Check judges arguments by them.
func TestPlainSchemaOfSDKTools(t *testing.T) {
	type in struct {
		Text  string  `json:"text" jsonschema:"the text"`
		N     int     `json:"n,omitempty"`
		F     float64 `json:"f"`
		Flag  bool    `json:"flag"`
		Inner struct {
			X string `json:"x"`
		} `json:"inner"`
	}
	s, err := jsonschema.For[in](nil)
	if err != nil {
		t.Fatal(err)
	}
	c := Compile(s)
	ok := map[string]any{"text": "a", "f": 1.5, "flag": true, "inner": map[string]any{"x": "y"}}
	if msg := c.Check(ok); msg != "" {
		t.Fatalf("valid arguments refused: %s", msg)
	}
	if c.plain == nil {
		t.Fatal("an inferred schema is not plain")
	}
	for _, bad := range []map[string]any{
		{"text": "a", "f": 1.5, "flag": true},                                          // inner missing
		{"text": "a", "f": 1.5, "flag": true, "inner": map[string]any{"x": 1.0}},       // x not a string
		{"text": "a", "f": 1.5, "flag": true, "inner": map[string]any{}, "extra": 1.0}, // additional property
		{"text": "a", "n": 1.5, "f": 1.0, "flag": true, "inner": map[string]any{"x": ""}},
	} {
		if c.Check(bad) == "" {
			t.Errorf("invalid arguments %v accepted", bad)
		}
	}
	// Go values that are not JSON's own take the round trip: ints become
	// numbers.
	if msg := c.Check(map[string]any{"text": "a", "n": 3, "f": 2, "flag": false, "inner": map[string]any{"x": ""}}); msg != "" {
		t.Fatalf("int arguments refused: %s", msg)
	}
}

func TestJSONNativeRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for range 5000 {
		v := jsonrand.Value(r, 0)
		if !jsonNative(v, 0) {
			t.Fatalf("jsonNative(%#v) = false", v)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var back any
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(v, back) {
			t.Fatalf("%#v came back as %#v", v, back)
		}
	}
	for _, v := range []any{
		math.NaN(), math.Inf(1), "\xff", map[string]any{"\xff": 1.0}, 3, int64(3), float32(1),
		map[string]any(nil), []any(nil), []string{"a"}, map[string]string{}, json.Number("1"),
	} {
		if jsonNative(v, 0) {
			t.Errorf("jsonNative(%#v) = true", v)
		}
	}
}

// TestCompile: a schema that cannot be used gives a nil Checker, which
// accepts everything; nil arguments are an empty object.
func TestCompile(t *testing.T) {
	for _, s := range []any{func() {}, "not a schema", map[string]any{"$ref": "#/nowhere"}} {
		if c := Compile(s); c != nil {
			t.Errorf("Compile(%#v) gave a checker", s)
		}
	}
	if msg := (*Checker)(nil).Check(map[string]any{"x": 1.0}); msg != "" {
		t.Errorf("a nil Checker refused: %s", msg)
	}
	c := Compile(map[string]any{"type": "object", "required": []any{"a"}, "properties": map[string]any{"a": map[string]any{"type": "string", "minLength": 2}}})
	if c == nil || c.plain != nil {
		t.Fatalf("Compile: %+v", c)
	}
	if c.Check(nil) == "" || c.Check(map[string]any{"a": "x"}) == "" || c.Check(map[string]any{"a": "xy"}) != "" {
		t.Error("a schema the validator decides was misjudged")
	}
	if msg := c.Check(map[string]any{"a": func() {}}); msg != "the arguments cannot be encoded as JSON" {
		t.Errorf("unencodable arguments: %q", msg)
	}
}

// TestMessageBounded: a refusal repeats an argument, or a key, only up to
// diag.EchoLimit characters, and is never longer than maxMessage, whatever
// the validator would have said.
func TestMessageBounded(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	prop := func(s map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{"text": s}}
	}
	for name, schema := range map[string]map[string]any{
		"type":                  prop(map[string]any{"type": "integer"}),
		"enum":                  prop(map[string]any{"enum": []any{"a", "b"}}),
		"maxLength":             prop(map[string]any{"type": "string", "maxLength": 3}),
		"pattern":               prop(map[string]any{"type": "string", "pattern": "^a$"}),
		"additional properties": {"type": "object", "additionalProperties": false},
		"array":                 prop(map[string]any{"type": "string"}),
	} {
		var text any = long
		if name == "array" {
			text = []any{long, long, long}
		}
		msg := Compile(schema).Check(map[string]any{"text": text, long: 1})
		if msg == "" {
			t.Errorf("%s: accepted", name)
			continue
		}
		if len(msg) > maxMessage+len("…") || strings.Contains(msg, strings.Repeat("x", diag.EchoLimit+1)) {
			t.Errorf("%s: %d bytes, repeating more than %d characters of the argument: %.200s", name, len(msg), diag.EchoLimit, msg)
		}
	}
}
