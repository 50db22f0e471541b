package runtime

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/toolname"
)

// candidate is one tool a toolset offers before naming.
type candidate struct {
	prefix   string // the source's tool prefix (server name, sanitized)
	source   string // the source's name as configured
	original string // the tool's own name
}

// nameIndex maps model-facing names to tools and back. Lookups are O(1):
// every accepted form of every name — the primary name, the qualified
// prefix__tool, the legacy dotted source.tool and the original name — is a
// key of one map.
type nameIndex struct {
	names []string       // primary names, in candidate order; cands[i].original reverses names[i]
	keys  map[string]int // every accepted form → candidate; ambiguous for a form two tools share
}

// ambiguous marks a key of nameIndex.keys that is an alias of two tools,
// and so names neither.
const ambiguous = -1

// buildIndex names candidates per the rules of DESIGN §6: a tool keeps its
// bare name (sanitized, fit to 64 characters) unless two sources share it;
// then each of them becomes prefix__tool. A name two tools still share after
// that is TOOL_NAME_CONFLICT. Primary names take precedence over the other
// accepted forms; a form that is no primary name and belongs to two tools
// resolves to neither.
func buildIndex(cands []candidate) (*nameIndex, error) {
	// Tools with one bare name form a group, named after its first
	// candidate; a group is shared when it holds two (source, original)
	// pairs. Naming needs no more than that.
	bare := make([]string, len(cands))
	group := make([]int, len(cands))
	shared := make([]bool, len(cands)) // by group
	groups := make(map[string]int, len(cands))
	for i, c := range cands {
		bare[i] = toolname.Bare(c.original)
		g, seen := groups[bare[i]]
		switch {
		case !seen:
			groups[bare[i]], g = i, i
		case !shared[g] && (cands[g].source != c.source || cands[g].original != c.original):
			shared[g] = true
		}
		group[i] = g
	}
	ix := &nameIndex{
		names: make([]string, len(cands)),
		keys:  make(map[string]int, 4*len(cands)),
	}
	var conflicts []string
	for i, c := range cands {
		name := bare[i]
		if shared[group[i]] {
			name = toolname.Qualify(c.prefix, c.original)
		}
		if j, dup := ix.keys[name]; dup {
			conflicts = append(conflicts, fmt.Sprintf("%s (%s.%s and %s.%s)", name, cands[j].source, cands[j].original, c.source, c.original))
			continue
		}
		ix.names[i] = name
		ix.keys[name] = i
	}
	if len(conflicts) > 0 {
		return nil, diag.New(diag.ToolNameConflict, "tool names still clash after qualification: %s", strings.Join(conflicts, ", "))
	}
	// The dotted forms (source.original, prefix.original) of every tool,
	// and the qualified form of those not named by it, are cut from one
	// string rather than allocated one by one.
	// plainQ[i]: Qualify(prefix, original) is prefix__original, since
	// Sanitize keeps both as they are and Fit keeps what is within MaxLen.
	plainQ := make([]bool, len(cands))
	size := 0
	for i, c := range cands {
		size += len(c.source) + len(c.prefix) + 2*len(c.original) + 2
		if !shared[group[i]] && len(c.prefix)+len(toolname.Separator)+len(c.original) <= toolname.MaxLen &&
			toolname.Sanitize(c.prefix) == c.prefix && toolname.Sanitize(c.original) == c.original {
			plainQ[i] = true
			size += len(c.prefix) + len(toolname.Separator) + len(c.original)
		}
	}
	var b strings.Builder
	b.Grow(size)
	for i, c := range cands {
		b.WriteString(c.source)
		b.WriteByte('.')
		b.WriteString(c.original)
		b.WriteString(c.prefix)
		b.WriteByte('.')
		b.WriteString(c.original)
		if plainQ[i] {
			b.WriteString(c.prefix)
			b.WriteString(toolname.Separator)
			b.WriteString(c.original)
		}
	}
	arena := b.String()
	cut := func(n int) string {
		s := arena[:n]
		arena = arena[n:]
		return s
	}
	for i, c := range cands {
		own := ix.names[i]
		bySource := cut(len(c.source) + 1 + len(c.original))
		byPrefix := cut(len(c.prefix) + 1 + len(c.original))
		var qualified string
		switch {
		case shared[group[i]]:
			qualified = own // a shared name's primary is its qualified form
		case plainQ[i]:
			qualified = cut(len(c.prefix) + len(toolname.Separator) + len(c.original))
		default:
			qualified = toolname.Qualify(c.prefix, c.original)
		}
		forms := [...]string{qualified, bySource, byPrefix, c.original}
		for k, a := range forms {
			if a == own || slices.Contains(forms[:k], a) {
				continue // the tool's own primary name, or a form already seen
			}
			j, seen := ix.keys[a]
			switch {
			case !seen:
				ix.keys[a] = i
			case j == ambiguous, j == i, ix.names[j] == a:
				// already ambiguous, already this tool's, or another tool's
				// primary name
			default:
				ix.keys[a] = ambiguous
			}
		}
	}
	return ix, nil
}

// lookup resolves any accepted form of a name to its candidate index.
func (ix *nameIndex) lookup(name string) (int, bool) {
	if i, ok := ix.keys[name]; ok && i != ambiguous {
		return i, true
	}
	return 0, false
}

// globMatch reports whether a tool name matches a filter pattern. Patterns
// were validated at compile time.
func globMatch(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}

// filter applies a grant's include (empty: all) then exclude globs.
func filter(name string, include, exclude []string) bool {
	if len(include) > 0 && !slices.ContainsFunc(include, func(p string) bool { return globMatch(p, name) }) {
		return false
	}
	return !slices.ContainsFunc(exclude, func(p string) bool { return globMatch(p, name) })
}
