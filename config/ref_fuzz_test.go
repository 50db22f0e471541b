package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/config"
)

// FuzzParseRef feeds arbitrary text to ParseRef and ParseEnvValue, which
// read secret references and stdio servers' env values. A reference that
// parses is written back as it reads; one that does not keeps no trace of
// the text (no scheme, no name) and says why with one of RefProblem's
// values; an env value is exactly one of a reference, a literal (the text
// itself) or a problem that repeats none of it.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{
		"${secrets:/mcp/runbooks/token}", "${env:TOKEN}", "${file:/run/secrets/t}",
		" ${env:A_1} ", "${env:1A}", "${secrets:relative}", "${secrets:/a/../b}", "${secrets:/a/}",
		"${file:a\x00b}", "${vault:/x}", "${env:}", "${env:A}${env:B}", "${secrets:/{x}}", "${ENV:A}",
		"$${env:A}", "literal", "hunter2 with space", "https://user:pw@x.example.com/", "a{b}", "'quoted'", "",
	} {
		f.Add(s)
	}
	problems := []config.RefProblem{config.RefLiteral, config.RefMalformed, config.RefSchemeUnknown}
	f.Fuzz(func(t *testing.T, s string) {
		r := config.ParseRef(s)
		if r.Valid() {
			if back := config.ParseRef(r.String()); back != r {
				t.Fatalf("%q reads as %+v, written back as %q, which reads as %+v", s, r, r.String(), back)
			}
		} else {
			if r.Scheme != "" || r.Name != "" || !slices.Contains(problems, r.Problem) {
				t.Fatalf("%q: not a reference, read as %+v", s, r)
			}
			if r.String() != "<invalid reference>" {
				t.Fatalf("%q: an invalid reference is written %q", s, r.String())
			}
		}

		v := config.ParseEnvValue(s)
		n := 0
		for _, set := range []bool{v.Ref != nil, v.Literal != "", v.Problem != ""} {
			if set {
				n++
			}
		}
		switch {
		case n > 1 || n == 0 && s != "":
			t.Fatalf("%q: env value %+v is not one thing", s, v)
		case v.Ref != nil && !v.Ref.Valid():
			t.Fatalf("%q: env value holds an invalid reference %+v", s, v.Ref)
		case v.Literal != "" && v.Literal != s:
			t.Fatalf("%q: env literal %q is not the text", s, v.Literal)
		case v.Problem != "" && len(s) >= 8 && strings.Contains(v.Problem, s):
			t.Fatalf("%q: the problem repeats the value: %s", s, v.Problem)
		}
	})
}
