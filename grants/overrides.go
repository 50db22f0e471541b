package grants

import (
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
)

// ToolOverride is the operator's classification of the tools one name or
// glob matches, overriding what their source claims. A field left unset
// keeps the claim, with MCP's coupling: destructive: true means not
// read-only, read_only: true means not destructive, and read_only: false
// without destructive means destructive.
type ToolOverride struct {
	// Destructive true sends the tool's calls through approval
	// (policies.approval) and makes it not read-only; false does not.
	Destructive *bool `koanf:"destructive" json:"destructive,omitempty"`
	// ReadOnly true says the tool changes nothing (it is then not
	// destructive, and a call may be sent again after a connection broke);
	// false without destructive makes it destructive.
	ReadOnly *bool `koanf:"read_only" json:"read_only,omitempty"`
	// Idempotent true says repeating a call has no further effect: it may
	// be sent again after a connection broke.
	Idempotent *bool `koanf:"idempotent" json:"idempotent,omitempty"`
}

// Apply returns the classification (destructive, readOnly, idempotent)
// with o's settings in place of the claims.
func (o ToolOverride) Apply(destructive, readOnly, idempotent bool) (bool, bool, bool) {
	switch {
	case o.Destructive != nil:
		destructive = *o.Destructive
	case o.ReadOnly != nil:
		destructive = !*o.ReadOnly
	}
	switch {
	case o.ReadOnly != nil:
		readOnly = *o.ReadOnly
	case o.Destructive != nil && *o.Destructive:
		readOnly = false
	}
	if o.Idempotent != nil {
		idempotent = *o.Idempotent
	}
	return destructive, readOnly, idempotent
}

func (o ToolOverride) same(p ToolOverride) bool {
	eq := func(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	return eq(o.Destructive, p.Destructive) && eq(o.ReadOnly, p.ReadOnly) && eq(o.Idempotent, p.Idempotent)
}

// ToolOverrides are a source's overrides, keyed by tool name or glob
// (path.Match syntax). The entry that decides for a tool is its exact
// name's, else the longest matching glob's; globs of one length that can
// match the same name and say different things are refused at compile
// time (CheckToolOverrides), so the choice is never arbitrary.
type ToolOverrides map[string]ToolOverride

// Lookup returns the entry that decides for the tool called name, and the
// key it is under.
func (o ToolOverrides) Lookup(name string) (ToolOverride, string, bool) {
	if e, ok := o[name]; ok {
		return e, name, true
	}
	best, found := "", false
	for k := range o {
		if !isGlob(k) {
			continue
		}
		if ok, _ := path.Match(k, name); !ok {
			continue
		}
		if !found || len(k) > len(best) || (len(k) == len(best) && k < best) {
			best, found = k, true
		}
	}
	return o[best], best, found
}

func isGlob(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// CheckToolOverrides validates a tools: map at p: every key a name or a
// valid glob, every entry saying something and not contradicting itself,
// and no two globs of equal rank that can match one name deciding
// differently (TOOL_OVERRIDE_CONFLICT). badGlob is the code of a malformed
// pattern.
func CheckToolOverrides(o map[string]*ToolOverride, badGlob diag.Code, p string) diag.Diagnostics {
	var ds diag.Diagnostics
	keys := slices.Sorted(maps.Keys(o))
	for _, k := range keys {
		kp := config.Join(p, k)
		if bad := checkGlob(k, badGlob, kp); bad != nil {
			ds = append(ds, bad...)
			continue
		}
		if o[k] == nil {
			ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, kp, "the override sets none of destructive, read_only, idempotent"))
			continue
		}
		ds = append(ds, CheckToolOverride(o[k], kp)...)
	}
	for i, a := range keys {
		for _, b := range keys[i+1:] {
			ea, eb := o[a], o[b]
			if ea == nil || eb == nil || !isGlob(a) || !isGlob(b) || len(a) != len(b) || ea.same(*eb) {
				continue
			}
			if globsOverlap(a, b) {
				ds = append(ds, diag.Errorf(diag.ToolOverrideConflict, config.Join(p, b),
					"the overrides %q and %q can match the same tool and say different things", a, b).
					WithDetail("an exact name decides over a glob, and a longer glob over a shorter one; between globs of one length, name the tools they share, or make the overrides agree"))
			}
		}
	}
	return ds
}

// CheckToolOverride validates one override at p (nil is none): it must
// say something, and not make a tool both destructive and read-only.
func CheckToolOverride(e *ToolOverride, p string) diag.Diagnostics {
	switch {
	case e == nil:
	case e.Destructive == nil && e.ReadOnly == nil && e.Idempotent == nil:
		return diag.Diagnostics{diag.Errorf(diag.ConfigValueInvalid, p, "the override sets none of destructive, read_only, idempotent")}
	case e.Destructive != nil && e.ReadOnly != nil && *e.Destructive && *e.ReadOnly:
		return diag.Diagnostics{diag.Errorf(diag.ConfigValueInvalid, p, "the override makes the tool both destructive and read-only").
			WithDetail("a read-only tool changes nothing; keep one of the two")}
	}
	return nil
}

// globsOverlap reports whether some name can match both path.Match
// patterns a and b. A character class is taken to overlap any other
// single character: a conflict it reports may be impossible, never the
// reverse.
func globsOverlap(a, b string) bool {
	ta, tb := globTokens(a), globTokens(b)
	memo := map[[2]int]bool{}
	var at func(i, j int) bool
	at = func(i, j int) bool {
		key := [2]int{i, j}
		if v, ok := memo[key]; ok {
			return v
		}
		memo[key] = false
		var r bool
		switch {
		case i == len(ta) && j == len(tb):
			r = true
		case i < len(ta) && ta[i] == "*":
			r = at(i+1, j) || (j < len(tb) && at(i, j+1))
		case j < len(tb) && tb[j] == "*":
			r = at(i, j+1) || (i < len(ta) && at(i+1, j))
		case i == len(ta) || j == len(tb):
			r = false
		default:
			r = tokensMeet(ta[i], tb[j]) && at(i+1, j+1)
		}
		memo[key] = r
		return r
	}
	return at(0, 0)
}

// globTokens splits a valid pattern into "*", "?", classes "[…]" and
// single characters, written "=c".
func globTokens(g string) []string {
	var out []string
	for i := 0; i < len(g); {
		switch g[i] {
		case '*':
			if len(out) == 0 || out[len(out)-1] != "*" {
				out = append(out, "*")
			}
			i++
		case '?':
			out = append(out, "?")
			i++
		case '[':
			j := i + 1
			for j < len(g) && g[j] != ']' {
				if g[j] == '\\' {
					j++
				}
				j++
			}
			out = append(out, g[i:min(j+1, len(g))])
			i = j + 1
		case '\\':
			if i+1 < len(g) {
				out = append(out, "="+g[i+1:i+2])
			}
			i += 2
		default:
			out = append(out, "="+g[i:i+1])
			i++
		}
	}
	return out
}

// tokensMeet reports whether two single-character tokens can match one
// character.
func tokensMeet(a, b string) bool {
	switch {
	case a == "?" || b == "?":
		return true
	case strings.HasPrefix(a, "["):
		if strings.HasPrefix(b, "[") {
			return true
		}
		ok, _ := path.Match(a, b[1:])
		return ok
	case strings.HasPrefix(b, "["):
		ok, _ := path.Match(b, a[1:])
		return ok
	}
	return a == b
}
