// Package jsonrand makes random values of the types encoding/json decodes
// into (nil, bool, string, float64, []any, map[string]any), for tests that
// check a shortcut against the library path it replaces on many inputs.
package jsonrand

import "math/rand/v2"

// Value returns a random JSON value, nested at most three levels below
// depth.
func Value(r *rand.Rand, depth int) any {
	switch r.IntN(8) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return []string{"", "x", "héllo", "<&>\u2028"}[r.IntN(4)]
	case 3:
		return float64(r.IntN(5) - 2)
	case 4:
		return r.Float64()*10 - 5
	case 5:
		if depth < 3 {
			a := []any{}
			for range r.IntN(3) {
				a = append(a, Value(r, depth+1))
			}
			return a
		}
	}
	return Object(r, depth)
}

// Object returns a random JSON object with some of the keys a, b, c, d.
func Object(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	if depth < 3 {
		for _, k := range []string{"a", "b", "c", "d"} {
			if r.IntN(2) == 0 {
				m[k] = Value(r, depth+1)
			}
		}
	}
	return m
}
