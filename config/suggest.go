package config

import "github.com/heddlehq/heddle/internal/suggest"

// closest returns the candidate nearest to got when one is a plausible
// misspelling of it, for a "did you mean" detail: the command line's rule
// (package suggest).
func closest(got string, candidates []string) (string, bool) {
	if c := suggest.Closest(got, candidates, 1, true); len(c) == 1 {
		return c[0], true
	}
	return "", false
}
