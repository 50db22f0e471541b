// Package celrules is the language of agents' policy rules: CEL, as
// package policy documents it. Linking it registers it with package policy
// (policy.RegisterLanguage), as a database driver registers itself with
// database/sql; package builtin and the compiler link it. The runtime does
// not: it decides with whatever language the program linked, and a program
// that links none refuses every rule (POLICY_INVALID).
package celrules

import "github.com/heddlehq/heddle/policy"

func init() { policy.RegisterLanguage(compileWhen) }
