package schemagen_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/internal/schemagen"
)

// root is the module root, seen from this package's directory.
const root = "../.."

// TestSchemasUpToDate fails when a committed schema is not what Generate
// makes from the Go types now.
func TestSchemasUpToDate(t *testing.T) {
	api, agent, err := schemagen.Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][]byte{schemagen.APIFile: api, schemagen.AgentFile: agent} {
		got, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Errorf("%v; run: make docs", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: the Go types it is generated from have changed; run: make docs", file)
		}
	}
}

// TestGenerateIsStable fails when two runs give different bytes (map order
// leaking into the output).
func TestGenerateIsStable(t *testing.T) {
	api1, agent1, err := schemagen.Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		api2, agent2, err := schemagen.Generate(root)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(api1, api2) || !bytes.Equal(agent1, agent2) {
			t.Fatal("two runs of Generate differ")
		}
	}
}

// TestObjectsClosed fails when an object of either schema accepts keys it
// does not name, other than a mapping of names to entries and the settings
// of an auth plugin (the only settings the loader takes whatever their
// keys). An object told apart by kind: is closed by each of its branches.
func TestObjectsClosed(t *testing.T) {
	for _, file := range []string{schemagen.APIFile, schemagen.AgentFile} {
		doc := readJSON(t, file)
		defs, _ := doc["$defs"].(map[string]any)
		var check func(where string, s map[string]any)
		check = func(where string, s map[string]any) {
			_, props := s["properties"]
			ap, closedSet := s["additionalProperties"]
			switch {
			case props && ap == false:
			case props && s["title"] == "plugin":
			case props && s["oneOf"] != nil:
				for _, b := range s["oneOf"].([]any) {
					ref, _ := b.(map[string]any)["$ref"].(string)
					def, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
					if !ok || (def["additionalProperties"] != false && def["title"] != "plugin") {
						t.Errorf("%s: %s: branch %s of an object told apart by kind: is not closed", file, where, ref)
					}
				}
			case props:
				t.Errorf("%s: %s: an object with properties that is not closed", file, where)
			case s["type"] == "object" && !closedSet:
				t.Errorf("%s: %s: an object that says nothing of its keys", file, where)
			}
			eachSub(s, func(key string, sub map[string]any) { check(where+"/"+key, sub) })
		}
		check("#", doc)
	}
}

// eachSub calls fn on every subschema of s, with its key.
func eachSub(s map[string]any, fn func(string, map[string]any)) {
	for k, v := range s {
		switch k {
		case "properties", "patternProperties", "$defs":
			for name, sub := range v.(map[string]any) {
				if m, ok := sub.(map[string]any); ok {
					fn(k+"/"+name, m)
				}
			}
		case "additionalProperties", "items", "not", "propertyNames":
			if m, ok := v.(map[string]any); ok {
				fn(k, m)
			}
		case "anyOf", "oneOf", "allOf":
			for i, sub := range v.([]any) {
				if m, ok := sub.(map[string]any); ok {
					fn(k+"/"+strconv.Itoa(i), m)
				}
			}
		}
	}
}

func readJSON(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return doc
}

// valueSchema returns a definition of the api schema, resolved on its own.
func valueSchema(t *testing.T, def string) *jsonschema.Resolved {
	t.Helper()
	doc := readJSON(t, schemagen.APIFile)
	s := map[string]any{"$defs": doc["$defs"], "$ref": "#/$defs/" + def}
	b, _ := json.Marshal(s)
	var sch jsonschema.Schema
	if err := json.Unmarshal(b, &sch); err != nil {
		t.Fatal(err)
	}
	rs, err := sch.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// valueSamples are written values of reference and env settings, valid and
// not, for the schema's patterns to judge as config does.
var valueSamples = []string{
	"${secrets:/heddle/runbooks/token}", "${secrets:/a}", " ${secrets:/a/b} ", "${secrets:/a.b/c.}",
	"${secrets:/.a}", "${secrets:/}", "${secrets:/a/}", "${secrets:/a/../b}", "${secrets:/a..b}",
	"${secrets:a/b}", "${secrets:/a b}", "${secrets:/a{b}", "${secrets:/a}b}",
	"${env:TOKEN}", "${env:_T1}", "${env:1T}", "${env:A-B}", "${env:}",
	"${file:/run/secrets/x}", "${file:../x}", "${file:x\x00y}", "${file:}",
	"${vault:/a}", "${SECRETS:/a}", "${secrets:/a", "$secrets:/a}", "{secrets:/a}", "${}",
	"", "plain", "X-Key=abc", "eu-west-1", "Bearer abc", "{token}", "'q'", `"q"`, "a`b",
	"https://u:p@git.example.com", "https://git.example.com/x@y", "postgres://u:p@db/x", "user@example.com",
	"tab\there", "line\nbreak", "form\ffeed", "$", "$x", "a$", "${", " ${", "${x",
}

// TestRefPatternAgreesWithParseRef fails when the schema of a secret
// reference accepts what config.ParseRef refuses, or the other way round.
func TestRefPatternAgreesWithParseRef(t *testing.T) {
	rs := valueSchema(t, "config.Ref")
	for _, s := range valueSamples {
		r := config.ParseRef(s)
		want := r.Valid()
		if got := rs.Validate(s) == nil; got != want {
			t.Errorf("%q: schema accepts %v, config.ParseRef %v", s, got, want)
		}
	}
}

// TestEnvValueSchemaAgreesWithParseEnvValue fails when the schema of an env
// value accepts what config.ParseEnvValue marks as a problem, or the other
// way round.
func TestEnvValueSchemaAgreesWithParseEnvValue(t *testing.T) {
	rs := valueSchema(t, "config.EnvValue")
	for _, s := range valueSamples {
		want := config.ParseEnvValue(s).Problem == ""
		if got := rs.Validate(s) == nil; got != want {
			t.Errorf("%q: schema accepts %v, config.ParseEnvValue %v", s, got, want)
		}
	}
}

// TestPlainRefusesReferences fails when the schema of a plain auth setting
// accepts a value the auth registry refuses as a reference, or refuses one
// it takes.
func TestPlainRefusesReferences(t *testing.T) {
	rs := valueSchema(t, "plain")
	for _, s := range valueSamples {
		want := !strings.HasPrefix(strings.TrimSpace(s), "${")
		if got := rs.Validate(s) == nil; got != want {
			t.Errorf("%q: schema accepts %v, the auth registry %v", s, got, want)
		}
	}
}

// draft7Keywords are the keywords the schemas may use: those that mean the
// same in draft 7, which yaml-language-server (the VS Code YAML extension)
// implements, as in draft 2020-12, which the schemas declare. $defs is
// only ever reached by a JSON pointer, which draft 7 resolves alike.
var draft7Keywords = map[string]bool{
	"$schema": true, "$comment": true, "$defs": true, "$ref": true,
	"title": true, "description": true,
	"type": true, "enum": true, "const": true, "pattern": true, "minLength": true,
	"properties": true, "patternProperties": true, "additionalProperties": true, "propertyNames": true, "required": true,
	"items": true, "anyOf": true, "oneOf": true, "not": true,
}

// TestReadableAsDraft7 fails when a schema uses a keyword outside
// draft7Keywords, or gives a $ref sibling keywords (draft 7 ignores them).
func TestReadableAsDraft7(t *testing.T) {
	for _, file := range []string{schemagen.APIFile, schemagen.AgentFile} {
		var check func(where string, s map[string]any)
		check = func(where string, s map[string]any) {
			for k := range s {
				if !draft7Keywords[k] {
					t.Errorf("%s: %s: keyword %s", file, where, k)
				}
			}
			if _, ok := s["$ref"]; ok && len(s) > 1 {
				t.Errorf("%s: %s: a $ref with siblings, which draft 7 ignores", file, where)
			}
			eachSub(s, func(key string, sub map[string]any) { check(where+"/"+key, sub) })
		}
		check("#", readJSON(t, file))
	}
}
