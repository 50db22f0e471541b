package runtime

import (
	"fmt"
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

// nameIndex maps model-facing names to tools and back.
//
// A tool answers to its primary name and to four aliases: the qualified
// prefix__tool, the dotted source.tool and prefix.tool, and its original
// name. Only primary names are keys of one big map; most aliases are a
// source's name or prefix joined to a tool's original name, so they are
// resolved by splitting the name at each separator and asking that source's
// own, small map of original names. The aliases that cannot be found that
// way (original names that are not the tool's primary name, and qualified
// names that sanitizing or cutting changed) are keys of a map of their own.
// A lookup is one probe for a primary name and a few for an alias, however
// many tools there are; building touches a big map once or twice per tool
// instead of once per form.
type nameIndex struct {
	names   []string            // primary names, in candidate order; cands[i].original reverses names[i]
	primary map[string]int      // primary name → candidate
	aliases map[string]int      // aliases not found by splitting → candidate; ambiguous for one two tools share
	sides   map[string][]*named // a source's name, and its prefix → the sources so called
	plainQ  []bool              // by candidate: its qualified name is prefix__original, unchanged
}

// named is one source's tools by original name.
type named struct {
	source, prefix string
	tools          map[string]int
}

// ambiguous marks an alias two tools share, which names neither.
const ambiguous = -1

// buildIndex names candidates per the rules of DESIGN §6: a tool keeps its
// bare name (sanitized, fit to 64 characters) unless two sources share it;
// then each of them becomes prefix__tool. A name two tools still share after
// that is TOOL_NAME_CONFLICT. Primary names take precedence over the other
// accepted forms; a form that is no primary name and belongs to two tools
// resolves to neither.
func buildIndex(cands []candidate) (*nameIndex, error) {
	ix := &nameIndex{
		names:   make([]string, len(cands)),
		primary: make(map[string]int, len(cands)),
		sides:   make(map[string][]*named),
		plainQ:  make([]bool, len(cands)),
	}
	groups := ix.nameBare(cands)
	qualified, conflicts := ix.qualifyShared(cands, groups)
	if len(conflicts) > 0 {
		slices.Sort(conflicts)
		return nil, diag.New(diag.ToolNameConflict, "tool names still clash after qualification: %s", strings.Join(conflicts, ", "))
	}
	srcs, sid := ix.groupSources(cands)
	ix.indexAliases(cands, srcs, sid, qualified)
	return ix, nil
}

// bareGroups are candidates grouped by bare name. A group is held by its
// first candidate, which primary maps the bare name to; it is shared when
// it holds two (source, original) pairs.
type bareGroups struct {
	of     []int  // by candidate: its group
	shared []bool // by group
	dups   []int  // candidates equal to their group's first
}

// sharedBy reports whether candidate i's group is shared.
func (g bareGroups) sharedBy(i int) bool { return g.shared[g.of[i]] }

// nameBare gives every candidate its bare name and groups candidates by it.
// A group that is not shared keeps the bare name as its primary name, so
// primary needs no second pass for it.
func (ix *nameIndex) nameBare(cands []candidate) bareGroups {
	g := bareGroups{of: make([]int, len(cands)), shared: make([]bool, len(cands))}
	for i, c := range cands {
		b := toolname.Bare(c.original)
		ix.names[i] = b
		first, seen := ix.primary[b]
		switch {
		case !seen:
			ix.primary[b], first = i, i
		case cands[first].source != c.source || cands[first].original != c.original:
			g.shared[first] = true
		default:
			g.dups = append(g.dups, i)
		}
		g.of[i] = first
	}
	return g
}

// qualifyShared names every member of a shared group prefix__tool, since
// the group's bare name names no tool. It returns how many it named so, and
// a description of every name two tools still share: a qualified name that
// is another's primary name, or a candidate repeating another's (source,
// original).
func (ix *nameIndex) qualifyShared(cands []candidate, g bareGroups) (qualified int, conflicts []string) {
	for i := range cands {
		if g.of[i] == i && g.shared[i] {
			delete(ix.primary, ix.names[i])
		}
	}
	for i, c := range cands {
		if !g.sharedBy(i) {
			continue
		}
		qualified++
		q := toolname.Qualify(c.prefix, c.original)
		ix.names[i] = q
		if j, dup := ix.primary[q]; dup {
			conflicts = append(conflicts, conflict(cands, q, min(i, j), max(i, j)))
			continue
		}
		ix.primary[q] = i
	}
	for _, i := range g.dups {
		if !g.sharedBy(i) { // a shared one clashed above
			conflicts = append(conflicts, conflict(cands, ix.names[i], g.of[i], i))
		}
	}
	return qualified, conflicts
}

// conflict describes name, which candidates j and i share.
func conflict(cands []candidate, name string, j, i int) string {
	return fmt.Sprintf("%s (%s.%s and %s.%s)", name, cands[j].source, cands[j].original, cands[i].source, cands[i].original)
}

// groupSources makes the maps of each source's tools by original name,
// reached in sides by the source's name and by its prefix, each at its
// final size, and returns them with every candidate's source. Candidates
// usually come source by source, so the last source is tried first.
func (ix *nameIndex) groupSources(cands []candidate) (srcs []*named, sid []int) {
	type sourceKey struct{ source, prefix string }
	bySource := make(map[sourceKey]int)
	sid = make([]int, len(cands))
	var counts []int
	last := -1
	for i, c := range cands {
		if last < 0 || srcs[last].source != c.source || srcs[last].prefix != c.prefix {
			k := sourceKey{c.source, c.prefix}
			s, seen := bySource[k]
			if !seen {
				s = len(srcs)
				bySource[k] = s
				srcs = append(srcs, &named{source: c.source, prefix: c.prefix})
				counts = append(counts, 0)
				ix.sides[c.source] = append(ix.sides[c.source], srcs[s])
				if c.prefix != c.source {
					ix.sides[c.prefix] = append(ix.sides[c.prefix], srcs[s])
				}
			}
			last = s
		}
		sid[i] = last
		counts[last]++
	}
	for s, n := range counts {
		srcs[s].tools = make(map[string]int, n)
	}
	return srcs, sid
}

// indexAliases records each candidate in its source's map (srcs[sid[i]])
// under its original name, notes whether its qualified name is plain, and
// keeps in aliases what a lookup cannot find by splitting a name: original
// names that are not the tool's primary name, and qualified names that
// sanitizing or cutting changed. The map is sized for the qualified tools,
// whose original names are such aliases.
func (ix *nameIndex) indexAliases(cands []candidate, srcs []*named, sid []int, qualified int) {
	ix.aliases = make(map[string]int, qualified)
	for i, c := range cands {
		srcs[sid[i]].tools[c.original] = i
		own := ix.names[i]
		ix.plainQ[i] = plainQualified(c)
		if c.original != own {
			ix.alias(c.original, i)
		}
		if !ix.plainQ[i] {
			if q := toolname.Qualify(c.prefix, c.original); q != own {
				ix.alias(q, i)
			}
		}
	}
}

// plainQualified reports whether c's qualified name is prefix__original,
// which sanitizing and cutting leave unchanged.
func plainQualified(c candidate) bool {
	return len(c.prefix)+len(toolname.Separator)+len(c.original) <= toolname.MaxLen &&
		toolname.Sanitize(c.prefix) == c.prefix && toolname.Sanitize(c.original) == c.original
}

// alias records a as an alias of candidate i kept in ix.aliases.
func (ix *nameIndex) alias(a string, i int) {
	if j, seen := ix.aliases[a]; !seen {
		ix.aliases[a] = i
	} else if j != i {
		ix.aliases[a] = ambiguous
	}
}

// lookup resolves any accepted form of a name to its candidate index. A
// primary name is one probe. Otherwise every tool the name is an alias of
// is collected, and the name resolves only when there is exactly one.
func (ix *nameIndex) lookup(name string) (int, bool) {
	if i, ok := ix.primary[name]; ok {
		return i, true
	}
	found := -1
	// add records candidate i; false when the name is now ambiguous.
	add := func(i int) bool {
		if found >= 0 && found != i || i == ambiguous {
			return false
		}
		found = i
		return true
	}
	if i, ok := ix.aliases[name]; ok && !add(i) {
		return 0, false
	}
	// source.original and prefix.original, split at every dot.
	for k := strings.IndexByte(name, '.'); k >= 0; {
		for _, s := range ix.sides[name[:k]] {
			if i, ok := s.tools[name[k+1:]]; ok && !add(i) {
				return 0, false
			}
		}
		next := strings.IndexByte(name[k+1:], '.')
		if next < 0 {
			break
		}
		k += 1 + next
	}
	// prefix__original, split at every double underscore.
	for k := strings.Index(name, toolname.Separator); k >= 0; {
		for _, s := range ix.sides[name[:k]] {
			if s.prefix != name[:k] {
				continue
			}
			if i, ok := s.tools[name[k+2:]]; ok && ix.plainQ[i] && !add(i) {
				return 0, false
			}
		}
		next := strings.Index(name[k+1:], toolname.Separator)
		if next < 0 {
			break
		}
		k += 1 + next
	}
	return found, found >= 0
}
