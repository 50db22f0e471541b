package config

import "strings"

// closest returns the candidate nearest to got when one is a plausible
// misspelling of it, for a "did you mean" detail: by edit distance,
// ignoring case, within a third of got's length (at least two edits), or
// one of which got is an abbreviation or a longer spelling. The command
// line's suggestions (heddlecmd) follow the same rule.
func closest(got string, candidates []string) (string, bool) {
	g := strings.ToLower(got)
	best, bestD := "", -1
	for _, c := range candidates {
		lc := strings.ToLower(c)
		abbrev := len(g) >= 2 && strings.HasPrefix(lc, g)
		longer := len(lc) >= 2 && strings.HasPrefix(g, lc)
		limit := max(2, len(g)/3)
		d := limit + 1
		switch {
		case g == lc:
			d = 0
		case abbrev:
			d = 1
		case len(g) <= maxSuggest && len(lc) <= maxSuggest && abs(len(g)-len(lc)) <= limit:
			d = editDistance(g, lc)
		}
		if !abbrev && d > limit && !longer {
			continue
		}
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best, bestD >= 0
}

// maxSuggest bounds the names closest compares by edit distance: names
// come from files and variables, which may be long.
const maxSuggest = 64

func abs(n int) int { return max(n, -n) }

// editDistance is the Levenshtein distance between a and b, by bytes.
func editDistance(a, b string) int {
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
