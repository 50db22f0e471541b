// Package benchpair times calls made side by side, for benchmarks that
// compare heddle with what it stands beside (in process, a raw client, a
// minimal front door): each round makes one call of every side in an order
// drawn at random, so that the machine's drift hits every side alike.
package benchpair

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Rounds makes a round of calls of every side named in names for each
// b.Loop iteration and returns how long each call of each side took. The
// order of each round is drawn from a fixed seed. The first error fails
// the benchmark.
func Rounds(b *testing.B, names []string, sides map[string]func() error) map[string][]time.Duration {
	b.Helper()
	ds := make(map[string][]time.Duration, len(names))
	order := rand.New(rand.NewPCG(1, 2))
	round := slices.Clone(names)
	for b.Loop() {
		order.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		for _, side := range round {
			t0 := time.Now()
			if err := sides[side](); err != nil {
				b.Fatal(err)
			}
			ds[side] = append(ds[side], time.Since(t0))
		}
	}
	return ds
}

// Medians returns each side's median call, in nanoseconds.
func Medians(ds map[string][]time.Duration) map[string]float64 {
	out := make(map[string]float64, len(ds))
	for side, d := range ds {
		out[side] = Percentile(d, 50)
	}
	return out
}

// Percentile returns the p-th percentile of ds in nanoseconds (0 for
// none). It sorts ds.
func Percentile(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[min(len(ds)-1, len(ds)*p/100)])
}
