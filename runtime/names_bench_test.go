package runtime

import (
	"fmt"
	"testing"

	"github.com/heddlehq/heddle/toolname"
)

// benchCandidates returns n tools spread over 20 sources, prefixed as the
// compiler prefixes them (the source name, sanitized); every fifth source
// has a dotted name, so its prefix differs. One tool in ten has a name every
// source shares (status_000, status_001, …), so those clash and are
// qualified; the others are unique to their source.
func benchCandidates(n int) []candidate {
	const sources = 20
	cands := make([]candidate, 0, n)
	for i := range n {
		s := i % sources
		j := i / sources
		source := fmt.Sprintf("src%02d", s)
		if s%5 == 0 {
			source = fmt.Sprintf("team.src%02d", s)
		}
		name := fmt.Sprintf("src%02d_tool_%05d", s, j)
		if j%10 == 0 {
			name = fmt.Sprintf("status_%05d", j)
		}
		cands = append(cands, candidate{prefix: toolname.Sanitize(source), source: source, original: name})
	}
	return cands
}

// benchSizes are the index sizes of the name-index benchmarks.
var benchSizes = []int{100, 1000, 10000}

// BenchmarkBuildIndex measures naming n tools from 20 sources, a tenth of
// them clashing. The target at 10,000 tools is 5 ms.
func BenchmarkBuildIndex(b *testing.B) {
	for _, n := range benchSizes {
		cands := benchCandidates(n)
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := buildIndex(cands); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/1e6, "ms/op")
		})
	}
}

// BenchmarkLookup measures resolving a name in an index of n tools,
// cycling through every tool. "primary" resolves primary names, the names
// models are given: one map probe. "alias" resolves every other accepted
// form that names one tool (qualified prefix__tool, dotted source.tool and
// prefix.tool, original names): a probe of the aliases map and of the
// sources the name's separators point to. Neither grows with n; what grows
// is the cache misses of touching an index larger than the CPU's caches.
func BenchmarkLookup(b *testing.B) {
	for _, mode := range []string{"primary", "alias"} {
		for _, n := range benchSizes {
			cands := benchCandidates(n)
			ix, err := buildIndex(cands)
			if err != nil {
				b.Fatal(err)
			}
			var keys []string
			for i, c := range cands {
				if mode == "primary" {
					keys = append(keys, ix.names[i])
					continue
				}
				for _, a := range []string{c.prefix + "__" + c.original, c.source + "." + c.original, c.prefix + "." + c.original, c.original} {
					if j, ok := ix.lookup(a); ok && j == i && a != ix.names[i] {
						keys = append(keys, a)
					}
				}
			}
			if len(keys) < n {
				b.Fatalf("only %d %s names for %d tools", len(keys), mode, n)
			}
			b.Run(fmt.Sprintf("%s/tools=%d", mode, n), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, ok := ix.lookup(keys[i]); !ok {
						b.Fatalf("%s not found", keys[i])
					}
					if i++; i == len(keys) {
						i = 0
					}
				}
			})
		}
	}
}
