package runtime

import (
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The bounds of search_tools: a query is read up to maxQueryBytes and
// maxQueryTerms distinct words, a tool's text up to maxDocBytes, and at
// most maxSearchResults tools are returned (defaultSearchResults when the
// model gives no limit).
const (
	maxQueryBytes        = 1024
	maxQueryTerms        = 32
	maxDocBytes          = 8192
	defaultSearchResults = 5
	maxSearchResults     = 20
)

// BM25's parameters, the usual ones.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// The weight of a word by where it occurs: a word of a tool's name says
// more about what it does than one of its description.
const (
	nameWeight  = 3
	titleWeight = 2
)

// searchIndex ranks the deferred tools of one built index for
// search_tools: Okapi BM25 over the words of their names, titles and
// descriptions. It is built on the first search after the index is, and
// never changed: it is safe for concurrent use.
type searchIndex struct {
	docs   []searchDoc
	df     map[string]int // in how many documents a word occurs
	avgLen float64
}

// searchDoc is one deferred tool: its entry in the built index, the
// weighted counts of its words, and their sum.
type searchDoc struct {
	entry int
	tf    map[string]float64
	len   float64
}

// newSearchIndex indexes the deferred entries of bi.
func newSearchIndex(bi *builtIndex) *searchIndex {
	s := &searchIndex{df: map[string]int{}}
	var total float64
	for i, e := range bi.entries {
		if !e.tool.Deferred {
			continue
		}
		d := searchDoc{entry: i, tf: map[string]float64{}}
		add := func(text string, w float64) {
			for _, t := range tokenize(text, maxDocBytes, -1) {
				d.tf[t] += w
				d.len += w
			}
		}
		add(e.tool.Name, nameWeight)
		if e.tool.OriginalName != e.tool.Name {
			add(e.tool.OriginalName, nameWeight)
		}
		if e.def != nil && e.def.tool != nil {
			title := e.def.tool.Title
			if title == "" && e.def.tool.Annotations != nil {
				title = e.def.tool.Annotations.Title
			}
			add(title, titleWeight)
		}
		add(e.tool.Description, 1)
		for t := range d.tf {
			s.df[t]++
		}
		total += d.len
		s.docs = append(s.docs, d)
	}
	if len(s.docs) > 0 {
		s.avgLen = total / float64(len(s.docs))
	}
	return s
}

// search returns the entries of the tools that match query, best first,
// at most limit of them; ties go by name. A tool that matches no word of
// the query is not returned. names gives an entry's name for the ties.
func (s *searchIndex) search(query string, limit int, names func(entry int) string) []int {
	terms := tokenize(query, maxQueryBytes, maxQueryTerms)
	if len(terms) == 0 || len(s.docs) == 0 || limit <= 0 {
		return nil
	}
	type hit struct {
		entry int
		score float64
	}
	var hits []hit
	n := float64(len(s.docs))
	for _, d := range s.docs {
		var score float64
		for _, t := range terms {
			f := d.tf[t]
			if f == 0 {
				continue
			}
			df := float64(s.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			norm := 1 - bm25B
			if s.avgLen > 0 {
				norm += bm25B * d.len / s.avgLen
			}
			score += idf * f * (bm25K1 + 1) / (f + bm25K1*norm)
		}
		if score > 0 {
			hits = append(hits, hit{d.entry, score})
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return names(hits[i].entry) < names(hits[j].entry)
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	out := make([]int, len(hits))
	for i, h := range hits {
		out[i] = h.entry
	}
	return out
}

// tokenize returns the words of s, read up to maxBytes: runs of letters
// and digits, split again where a lower-case letter meets an upper-case
// one (getIncident is get and incident), lower-cased, with a plural's
// final s taken off (incidents is incident). With maxTerms ≥ 0 it returns
// at most that many distinct words, in order of first occurrence;
// otherwise every word, repeats included.
func tokenize(s string, maxBytes, maxTerms int) []string {
	if len(s) > maxBytes {
		s = s[:maxBytes]
	}
	var out []string
	seen := map[string]bool{}
	var word strings.Builder
	var prev rune
	flush := func() bool {
		if word.Len() == 0 {
			return true
		}
		w := stem(word.String())
		word.Reset()
		if maxTerms >= 0 {
			if seen[w] {
				return true
			}
			if len(out) == maxTerms {
				return false
			}
			seen[w] = true
		}
		out = append(out, w)
		return true
	}
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		switch {
		case r == utf8.RuneError && size <= 1:
			if !flush() {
				return out
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				if !flush() {
					return out
				}
			}
			word.WriteRune(unicode.ToLower(r))
		default:
			if !flush() {
				return out
			}
		}
		prev = r
	}
	flush()
	return out
}

// stem takes the plural's s off a word of four letters or more (runbooks,
// incidents), and leaves words ending in ss (access) alone.
func stem(w string) string {
	if len(w) >= 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		return w[:len(w)-1]
	}
	return w
}
