// Package suggest finds the names a mistyped one was likely meant to be,
// for the "did you mean" of the command line's usage errors and of the
// configuration's diagnostics: one rule for both.
//
//	suggest.Closest("runbok", []string{"runbooks", "catalog"}, 1, true) // [runbooks]
package suggest

import (
	"cmp"
	"slices"
	"strings"
)

// maxCompared bounds the names compared by edit distance: names may come
// from files and variables, and may be long. Longer ones are matched by
// the prefix rules alone.
const maxCompared = 64

// Distance is the Levenshtein edit distance between a and b, by bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Closest returns up to n of candidates, nearest to got first (ties in the
// candidates' order), ignoring case. Nearest is by edit distance, except
// that got as a prefix of a candidate is an abbreviation, as near as one
// typo ("--log" for --log-level). With near, it keeps only plausible
// misspellings: within a third of got's length (at least two edits), an
// abbreviation, or a candidate that got begins with ("warning" for warn).
// Without near, it keeps the n nearest whatever their distance.
func Closest(got string, candidates []string, n int, near bool) []string {
	type scored struct {
		name string
		d    int
	}
	g := strings.ToLower(got)
	limit := max(2, len(g)/3)
	var ss []scored
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := limit + 1
		if len(g) <= maxCompared && len(lc) <= maxCompared {
			d = Distance(g, lc)
		}
		abbrev := len(g) >= 2 && strings.HasPrefix(lc, g)
		if abbrev {
			d = min(d, 1)
		}
		if near && !abbrev && d > limit && !(len(lc) >= 2 && strings.HasPrefix(g, lc)) {
			continue
		}
		ss = append(ss, scored{c, d})
	}
	slices.SortStableFunc(ss, func(a, b scored) int { return cmp.Compare(a.d, b.d) })
	var out []string
	for _, s := range ss {
		if len(out) == n {
			break
		}
		out = append(out, s.name)
	}
	return out
}
