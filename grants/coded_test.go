package grants_test

import (
	"slices"
	"testing"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
)

// codedKind is a kind with codes of its own and nothing else.
type codedKind struct {
	name  string
	codes []diag.Code
}

func (k codedKind) Name() string    { return k.name }
func (k codedKind) Section() string { return "" }
func (k codedKind) Configure(*grants.Env, map[string]any) (grants.Configured, diag.Diagnostics) {
	return nil, nil
}

func (k codedKind) Codes() []diag.Entry {
	var out []diag.Entry
	for _, c := range k.codes {
		out = append(out, diag.Entry{Code: c, Phase: diag.PhaseStartup, Meaning: "m", Fix: "f", Example: "e"})
	}
	return out
}

// plainKind has no codes of its own.
type plainKind struct{ name string }

func (k plainKind) Name() string    { return k.name }
func (k plainKind) Section() string { return "" }
func (k plainKind) Configure(*grants.Env, map[string]any) (grants.Configured, diag.Diagnostics) {
	return nil, nil
}

var _ grants.Coded = codedKind{}

// TestSetCatalog: a set's catalogue is the core's, in its order, then each
// Coded kind's entries in the set's order, and Entry finds either.
func TestSetCatalog(t *testing.T) {
	set := grants.NewSet(
		codedKind{name: "ticket", codes: []diag.Code{"TICKET_QUEUE_UNKNOWN", "TICKET_QUEUE_UNREACHABLE"}},
		plainKind{name: "plain"},
		codedKind{name: "pager", codes: []diag.Code{"PAGER_UNREACHABLE"}},
	)
	core := diag.Catalog()
	cat := set.Catalog()
	if len(cat) != len(core)+3 {
		t.Fatalf("catalogue of %d entries, want the core's %d and 3", len(cat), len(core))
	}
	if !slices.EqualFunc(cat[:len(core)], core, func(a, b diag.Entry) bool { return a.Code == b.Code }) {
		t.Error("the core's entries are not first, in their order")
	}
	var kinds []diag.Code
	for _, e := range cat[len(core):] {
		kinds = append(kinds, e.Code)
	}
	if want := []diag.Code{"TICKET_QUEUE_UNKNOWN", "TICKET_QUEUE_UNREACHABLE", "PAGER_UNREACHABLE"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds' codes = %v, want %v", kinds, want)
	}
	for _, c := range []diag.Code{diag.ConfigParse, "PAGER_UNREACHABLE"} {
		if e, ok := set.Entry(c); !ok || e.Code != c {
			t.Errorf("Entry(%s) = %v, %v", c, e.Code, ok)
		}
	}
	if _, ok := set.Entry("NO_SUCH_CODE"); ok {
		t.Error("Entry found a code no one catalogues")
	}
	cat[0].Meaning = "changed"
	if set.Catalog()[0].Meaning == "changed" {
		t.Error("Catalog returns the set's own slice")
	}
}

// TestEmptySetCatalog: a program that links no kinds has the core's
// catalogue.
func TestEmptySetCatalog(t *testing.T) {
	var nilSet *grants.Set
	for _, s := range []*grants.Set{nilSet, grants.NewSet()} {
		if got, want := len(s.Catalog()), len(diag.Catalog()); got != want {
			t.Errorf("catalogue of %d entries, want the core's %d", got, want)
		}
		if _, ok := s.Entry(diag.ToolUnknown); !ok {
			t.Error("the core's code is not found")
		}
	}
}

// TestSetCodeTwice: a code catalogued by two kinds, or by a kind and the
// core, is a programming error NewSet refuses.
func TestSetCodeTwice(t *testing.T) {
	for name, kinds := range map[string][]grants.Kind{
		"two kinds": {
			codedKind{name: "a", codes: []diag.Code{"SHARED_CODE"}},
			codedKind{name: "b", codes: []diag.Code{"SHARED_CODE"}},
		},
		"a kind and the core": {codedKind{name: "a", codes: []diag.Code{diag.ToolUnknown}}},
		"one kind twice":      {codedKind{name: "a", codes: []diag.Code{"X_CODE", "X_CODE"}}},
		"an empty code":       {codedKind{name: "a", codes: []diag.Code{""}}},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("NewSet did not panic")
				}
			}()
			grants.NewSet(kinds...)
		})
	}
}
