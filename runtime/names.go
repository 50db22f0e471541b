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
	ref      any    // what the caller of buildIndex attaches
}

// nameIndex maps model-facing names to tools and back. Lookups are O(1):
// every accepted form of every name — the primary name, the qualified
// prefix__tool, the legacy dotted source.tool and the original name — is a
// key of one map.
type nameIndex struct {
	names   []string          // primary names, in candidate order
	primary map[string]int    // primary name → candidate
	alias   map[string]int    // other accepted forms → candidate
	byName  map[string]string // primary → original, for reversal
}

// buildIndex names candidates per the rules of DESIGN §6: a tool keeps its
// bare name (sanitized, fit to 64 characters) unless two sources share it;
// then each of them becomes prefix__tool. A name two tools still share after
// that is TOOL_NAME_CONFLICT.
func buildIndex(cands []candidate) (*nameIndex, error) {
	bare := make([]string, len(cands))
	sources := map[string]map[string]bool{} // bare name → sources offering it
	for i, c := range cands {
		bare[i] = toolname.Bare(c.original)
		if sources[bare[i]] == nil {
			sources[bare[i]] = map[string]bool{}
		}
		sources[bare[i]][c.source+"\x00"+c.original] = true
	}
	ix := &nameIndex{
		names:   make([]string, len(cands)),
		primary: make(map[string]int, len(cands)),
		alias:   make(map[string]int, 3*len(cands)),
		byName:  make(map[string]string, len(cands)),
	}
	var conflicts []string
	for i, c := range cands {
		name := bare[i]
		if len(sources[name]) > 1 {
			name = toolname.Qualify(c.prefix, c.original)
		}
		if j, dup := ix.primary[name]; dup {
			conflicts = append(conflicts, fmt.Sprintf("%s (%s.%s and %s.%s)", name, cands[j].source, cands[j].original, c.source, c.original))
			continue
		}
		ix.names[i] = name
		ix.primary[name] = i
		ix.byName[name] = c.original
	}
	if len(conflicts) > 0 {
		return nil, diag.New(diag.ToolNameConflict, "tool names still clash after qualification: %s", strings.Join(conflicts, ", "))
	}
	ambiguous := map[string]bool{}
	for i, c := range cands {
		for _, a := range []string{toolname.Qualify(c.prefix, c.original), c.source + "." + c.original, c.prefix + "." + c.original, c.original} {
			if _, isPrimary := ix.primary[a]; isPrimary || ambiguous[a] {
				continue
			}
			if j, seen := ix.alias[a]; seen && j != i {
				delete(ix.alias, a)
				ambiguous[a] = true
				continue
			}
			ix.alias[a] = i
		}
	}
	return ix, nil
}

// lookup resolves any accepted form of a name to its candidate index.
func (ix *nameIndex) lookup(name string) (int, bool) {
	if i, ok := ix.primary[name]; ok {
		return i, true
	}
	i, ok := ix.alias[name]
	return i, ok
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
