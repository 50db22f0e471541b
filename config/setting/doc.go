// Package setting declares the parts of heddle's configuration that are
// read past the loader — by the plan, the policy engine, the secrets
// resolver and the runtime — as plain Go values: where a setting is (its
// config path), a secret reference written as a setting's value, the words
// policies.approval and policies.limits[i].by take, and the serve: and mcp:
// sections, which the plan carries as they were written.
//
//	ref := setting.ParseRef("${secrets:/heddle/catalog/token}")
//	at := setting.Item(setting.Join("policies", "rules"), 2) // policies.rules[2]
//	if !ref.Valid() { … } // ref.Problem says why, without the value
//
// It imports only the standard library. Package config, which reads the
// files (YAML, layering, positions, strict decoding), re-exports every name
// declared here, so that config.Ref and setting.Ref are one type; a program
// that loads configuration uses config, and a package the runtime links
// uses this one, so that the runtime's import graph holds no YAML parser or
// loader.
package setting
