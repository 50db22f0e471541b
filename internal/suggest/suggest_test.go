package suggest

import (
	"slices"
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	names := []string{"runbooks", "catalog", "log-level", "warn"}
	for _, tc := range []struct {
		got  string
		n    int
		near bool
		want []string
	}{
		{"runbok", 1, true, []string{"runbooks"}},
		{"RUNBOOKS", 1, true, []string{"runbooks"}},
		{"log", 1, true, []string{"log-level"}},           // an abbreviation
		{"warning", 1, true, []string{"warn"}},            // a longer spelling
		{"zzzzzz", 1, true, nil},                          // nothing near
		{"zzzzzz", 2, false, []string{"warn", "catalog"}}, // the nearest anyway
		{strings.Repeat("x", 100), 1, true, nil},          // too long to compare
	} {
		if got := Closest(tc.got, names, tc.n, tc.near); !slices.Equal(got, tc.want) {
			t.Errorf("Closest(%.12q, %d, %v) = %q, want %q", tc.got, tc.n, tc.near, got, tc.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "abc", 0}, {"kitten", "sitting", 3}, {"", "abc", 3}} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
