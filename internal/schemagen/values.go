package schemagen

import "github.com/invopop/jsonschema"

// The patterns below are the loader's own tests of a value, written for
// JSON Schema. They use no look-around, so that Go's regexp (the validator
// heddle's tests use) and ECMAScript's (editors) read them alike.
const (
	// RefPattern matches what config.ParseRef accepts: ${secrets:/path}
	// (a path without ".." or a trailing /), ${env:NAME} or ${file:PATH},
	// with white space around.
	RefPattern = `^\s*\$\{(?:secrets:/(?:\.?[^{}\s.])*(?:\.?[^{}\s./]|\.)|env:[A-Za-z_][A-Za-z0-9_]*|file:[^{}\s\x00]+)\}\s*$`
	// EnvLiteralPattern matches an env value config.ParseEnvValue keeps as
	// a literal: no white space, braces or quotes.
	EnvLiteralPattern = "^[^ \\t\\r\\n{}\"'\\x60]*$"
	// UserinfoPattern matches a URL with credentials in it, which an env
	// value may not be.
	UserinfoPattern = `^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@`
	// EnvNamePattern matches an environment variable's name (grants.CheckEnv).
	EnvNamePattern = `^[A-Za-z_][A-Za-z0-9_]*$`
	// PlainPattern matches a string that is not a secret reference: the
	// plain settings of an auth strategy refuse one.
	PlainPattern = `^\s*(?:$|[^\s$]|\$(?:$|[^{]))`
)

// Names of the definitions this package writes itself.
const (
	refDef        = "config.Ref"
	envValueDef   = "config.EnvValue"
	authDef       = "config.Auth"
	capabilityDef = "config.Capability"
	plainDef      = "plain"
)

func ref(def string) *jsonschema.Schema { return &jsonschema.Schema{Ref: "#/$defs/" + def} }

// refSchema is a secret reference.
func refSchema(description string) *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Description: description,
		Pattern:     RefPattern,
	}
}

// envValueSchema is one value of a child process's env: a reference or a
// literal that can be a value.
func envValueSchema(description string) *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Description: description,
		AnyOf: []*jsonschema.Schema{
			ref(refDef),
			{Pattern: EnvLiteralPattern, Not: &jsonschema.Schema{Pattern: UserinfoPattern}},
		},
	}
}

// plainSchema is a string that is not a secret reference.
func plainSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Description: "A plain value, not a secret reference.",
		Pattern:     PlainPattern,
	}
}

// envNames holds the keys of an env map to variable names.
func envNames() *jsonschema.Schema {
	return &jsonschema.Schema{Pattern: EnvNamePattern}
}
