package benchpair

import (
	"testing"
	"time"
)

// TestRounds: every side is called once a round, and the rounds are not
// all in one order.
func TestRounds(t *testing.T) {
	var ds map[string][]time.Duration
	orders := map[string]bool{}
	testing.Benchmark(func(b *testing.B) {
		order := ""
		side := func(name string) func() error {
			return func() error {
				order += name
				if len(order) == 3 {
					orders[order] = true
					order = ""
				}
				return nil
			}
		}
		ds = Rounds(b, []string{"a", "b", "c"}, map[string]func() error{"a": side("a"), "b": side("b"), "c": side("c")})
	})
	if n := len(ds["a"]); n == 0 || len(ds["b"]) != n || len(ds["c"]) != n {
		t.Fatalf("calls per side: a %d, b %d, c %d, want the same, not none", len(ds["a"]), len(ds["b"]), len(ds["c"]))
	}
	if len(ds["a"]) > 20 && len(orders) < 2 {
		t.Errorf("%d rounds in %d order(s), want them drawn at random", len(ds["a"]), len(orders))
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	if got := Percentile(ds, 50); got != 3 {
		t.Errorf("median of 1..5 = %v, want 3", got)
	}
	if got := Percentile(ds, 99); got != 5 {
		t.Errorf("99th percentile of 1..5 = %v, want 5", got)
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("percentile of none = %v, want 0", got)
	}
	if got := Medians(map[string][]time.Duration{"x": {2, 1, 3}}); got["x"] != 2 {
		t.Errorf("Medians = %v, want x: 2", got)
	}
}
