package argcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/heddlehq/heddle/diag"
)

// FuzzCheck feeds a tool's input schema, as a server sends it, and a
// call's arguments, as a model sends them, to Compile and Check. Neither
// may panic; the shortcuts decide as the slow paths they skip (every
// combination of jsonNative and quickValid accepts or refuses alike); a
// refusal is at most maxMessage bytes of UTF-8, and repeats no long argument whole.
//
// The seeds are the input schemas of the tools in modelfmt/testdata/tools
// (the shipped example's agents, and real servers'), each with no
// arguments, and hand-written schemas of the keywords the validator
// knows.
func FuzzCheck(f *testing.F) {
	files, _ := filepath.Glob("../../modelfmt/testdata/tools/*.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var tools []struct {
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(data, &tools); err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		for _, tool := range tools {
			f.Add([]byte(tool.InputSchema), []byte(`{}`))
		}
	}
	long := strings.Repeat("é", diag.EchoLimit+1)
	for _, s := range [][2]string{
		{`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`, `{"message":"hi"}`},
		{`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`, `{"message":1}`},
		{`{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":10}},"additionalProperties":false}`, `{"n":11,"x":true}`},
		{`{"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":3,"pattern":"^[a-z]+$"}}}`, `{"s":"` + long + `"}`},
		{`{"type":"object","properties":{"e":{"enum":["a","b",null,1]}}}`, `{"e":"` + long + `"}`},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"number"},"minItems":1,"uniqueItems":true}}}`, `{"a":[1,1]}`},
		{`{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`, `{"next":{"next":{"next":1}}}`},
		{`{"oneOf":[{"type":"object","required":["a"]},{"type":"object","required":["b"]}]}`, `{"a":1,"b":2}`},
		{`{"type":"object","patternProperties":{"^x":{"type":"string"}},"propertyNames":{"maxLength":3}}`, `{"xyzw":1}`},
		{`{"type":"object","if":{"required":["a"]},"then":{"required":["b"]},"else":{"required":["c"]}}`, `{"a":1}`},
		{`{"type":"object","dependentRequired":{"a":["b"]},"not":{"required":["z"]}}`, `{"a":1,"z":1}`},
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"t":{"type":["string","null"],"format":"date-time"}}}`, `{"t":"x"}`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":{"type":"boolean"}}`, `{"a":true,"` + long + `":"` + long + `"}`},
		{`{"$ref":"https://example.com/remote.json"}`, `{}`},
		{`{"type":"object","properties":{"a":{"$ref":"#/nowhere"}}}`, `{}`},
		{`true`, `{}`},
		{`false`, `{}`},
		{`{"type":"nonsense"}`, `{}`},
		{`{"type":"object","properties":{"deep":{"type":"object"}}}`, `{"deep":` + strings.Repeat(`{"a":`, 80) + `1` + strings.Repeat(`}`, 80) + `}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, schemaJSON, argsJSON []byte) {
		var schema any
		if json.Unmarshal(schemaJSON, &schema) != nil {
			return
		}
		c := Compile(schema)
		var args map[string]any
		if json.Unmarshal(argsJSON, &args) != nil {
			return
		}
		msg := c.Check(args)
		if c == nil {
			if msg != "" {
				t.Fatalf("a nil checker refused: %s", msg)
			}
			return
		}
		for _, mode := range [][2]bool{{false, false}, {false, true}, {true, false}} {
			if m := c.check(args, mode[0], mode[1]); (m == "") != (msg == "") {
				t.Errorf("with jsonNative %v and quickValid %v: %q; with both: %q", mode[0], mode[1], m, msg)
			}
		}
		// JSON decodes to valid UTF-8, and a cut message is cut between
		// characters.
		if len(msg) > maxMessage+len("…") || !utf8.ValidString(msg) {
			t.Errorf("message of %d bytes, valid UTF-8 %v: %.600q", len(msg), utf8.ValidString(msg), msg)
		}
		var long []string
		collectLong(map[string]any(args), &long)
		for _, s := range long {
			if diag.Clip(s) != s && strings.Contains(msg, s) {
				t.Errorf("message repeats a %d-byte argument whole: %.200q", len(s), msg)
			}
		}
	})
}
