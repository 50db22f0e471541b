package toolname

import (
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Sanitize("run.books"), "run_books"},
		{Sanitize("héllo wörld"), "h_llo_w_rld"},
		{Sanitize(""), "_"},
		{Qualify("git", "status"), "git__status"},
		{Qualify("run.books", "search.docs"), "run_books__search_docs"},
		{Bare("ok-name_1"), "ok-name_1"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	a, b := Fit(strings.Repeat("a", 80)), Fit(strings.Repeat("a", 79)+"b")
	if len(a) != MaxLen || len(b) != MaxLen || a == b {
		t.Errorf("Fit: %q and %q", a, b)
	}
	if Fit(a) != a {
		t.Error("Fit is not idempotent")
	}
	for _, n := range []string{a, Qualify(strings.Repeat("s", 40), strings.Repeat("t", 40))} {
		if !Valid(n) {
			t.Errorf("%q is not valid", n)
		}
	}
	for name, want := range map[string][3]string{
		"git__status": {"git", "status", "ok"},
		"git.status":  {"git", "status", "ok"},
		"status":      {"", "", ""},
		"__x":         {"", "", ""},
	} {
		p, tl, ok := Split(name)
		if got := [3]string{p, tl, map[bool]string{true: "ok"}[ok]}; got != want {
			t.Errorf("Split(%q) = %v, want %v", name, got, want)
		}
	}
}

// FuzzNames: whatever a server calls its tool, the model-facing names are
// valid, and Fit is deterministic.
func FuzzNames(f *testing.F) {
	f.Add("server", "tool.name")
	f.Add("ü", strings.Repeat("x", 200))
	f.Fuzz(func(t *testing.T, prefix, tool string) {
		for _, n := range []string{Bare(tool), Qualify(prefix, tool)} {
			if !Valid(n) {
				t.Fatalf("%q is not valid", n)
			}
		}
		first := Qualify(prefix, tool)
		if again := Qualify(prefix, tool); again != first {
			t.Fatalf("not deterministic: %q then %q", first, again)
		}
	})
}
