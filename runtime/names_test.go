package runtime

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/toolname"
)

// TestBuildIndex covers DESIGN §6 on the index alone: bare names unless two
// sources share them, qualification, sanitizing, cutting with a hash,
// accepted aliases, and the conflicts qualification cannot resolve.
func TestBuildIndex(t *testing.T) {
	long := strings.Repeat("x", 70)
	ix, err := buildIndex([]candidate{
		{prefix: "git", source: "git", original: "status"},
		{prefix: "fs", source: "fs", original: "status"},
		{prefix: "git", source: "git", original: "commit"},
		{prefix: "run_books", source: "run.books", original: "search.docs"},
		{prefix: "fs", source: "fs", original: long},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"git__status", "fs__status", "commit", "search_docs", toolname.Fit(long)}
	for i, w := range want {
		if ix.names[i] != w {
			t.Errorf("name %d = %q, want %q", i, ix.names[i], w)
		}
		if !toolname.Valid(ix.names[i]) {
			t.Errorf("%q is not a valid tool name", ix.names[i])
		}
	}
	if n := len(ix.names[4]); n != toolname.MaxLen {
		t.Errorf("cut name has %d characters", n)
	}
	for name, wantIdx := range map[string]int{
		"git__status": 0, "git.status": 0, "fs.status": 1, "commit": 2, "git__commit": 2,
		"search_docs": 3, "run.books.search.docs": 3, "run_books__search_docs": 3, "search.docs": 3,
	} {
		if i, ok := ix.lookup(name); !ok || i != wantIdx {
			t.Errorf("lookup(%q) = %d, %v; want %d", name, i, ok, wantIdx)
		}
	}
	if _, ok := ix.lookup("status"); ok {
		t.Error("the shared bare name resolves")
	}

	// Two tools of one server that sanitize alike still clash qualified.
	_, err = buildIndex([]candidate{
		{prefix: "a", source: "a", original: "x.y"},
		{prefix: "a", source: "a", original: "x_y"},
		{prefix: "b", source: "b", original: "x_y"},
	})
	if !diag.Has(err, diag.ToolNameConflict) {
		t.Fatalf("err = %v, want TOOL_NAME_CONFLICT", err)
	}
}

// refIndex is DESIGN §6 written as plainly as possible, to check buildIndex
// against: it returns the primary names, whether naming fails, and a
// resolver that tries every accepted form of every tool.
func refIndex(cands []candidate) ([]string, bool, func(string) (int, bool)) {
	owners := map[string]map[[2]string]bool{}
	for _, c := range cands {
		b := toolname.Bare(c.original)
		if owners[b] == nil {
			owners[b] = map[[2]string]bool{}
		}
		owners[b][[2]string{c.source, c.original}] = true
	}
	names := make([]string, len(cands))
	used := map[string]int{}
	for i, c := range cands {
		names[i] = toolname.Bare(c.original)
		if len(owners[names[i]]) > 1 {
			names[i] = toolname.Qualify(c.prefix, c.original)
		}
		if _, dup := used[names[i]]; dup {
			return nil, true, nil
		}
		used[names[i]] = i
	}
	forms := func(c candidate) []string {
		return []string{toolname.Qualify(c.prefix, c.original), c.source + "." + c.original, c.prefix + "." + c.original, c.original}
	}
	return names, false, func(name string) (int, bool) {
		if i, ok := used[name]; ok {
			return i, true
		}
		found := -1
		for i, c := range cands {
			if slices.Contains(forms(c), name) {
				if found >= 0 {
					return 0, false
				}
				found = i
			}
		}
		return found, found >= 0
	}
}

// TestBuildIndexMatchesReference compares buildIndex with refIndex on
// random tool sets drawn from names made to collide: dotted and
// underscored source names, originals with dots and double underscores,
// names longer than 64 characters, and duplicates. Every form of every
// tool, and names spliced from the parts, must resolve alike.
func TestBuildIndexMatchesReference(t *testing.T) {
	long := strings.Repeat("l", 60)
	sources := []string{"a", "b", "a.b", "a_b", "a__b", "x.y.z", "git", long, ""}
	originals := []string{"x", "b.x", "b__x", "x.y", "x_y", "b", "__", ".", "", "y.z", "status", long + "tool", long + "t.ol", "a.b.x"}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(pool []string) string { return pool[rng.IntN(len(pool))] }
	conflicts := 0
	for round := range 20000 {
		var cands []candidate
		for range 1 + rng.IntN(8) {
			s := pick(sources)
			if s == "" {
				s = "s"
			}
			cands = append(cands, candidate{prefix: toolname.Sanitize(s), source: s, original: pick(originals)})
		}
		names, fails, resolve := refIndex(cands)
		ix, err := buildIndex(cands)
		if fails {
			if !diag.Has(err, diag.ToolNameConflict) {
				t.Fatalf("round %d %v: err = %v, want TOOL_NAME_CONFLICT", round, cands, err)
			}
			conflicts++
			continue
		}
		if err != nil {
			t.Fatalf("round %d %v: %v", round, cands, err)
		}
		if !slices.Equal(ix.names, names) {
			t.Fatalf("round %d %v: names %q, want %q", round, cands, ix.names, names)
		}
		var queries []string
		for _, c := range cands {
			queries = append(queries, toolname.Qualify(c.prefix, c.original), c.source+"."+c.original, c.prefix+"."+c.original,
				c.original, c.prefix+"__"+c.original, pick(sources)+"."+pick(originals), pick(sources)+"__"+pick(originals))
		}
		queries = append(queries, names...)
		for _, q := range queries {
			gi, gok := ix.lookup(q)
			wi, wok := resolve(q)
			if gok != wok || gok && gi != wi {
				t.Fatalf("round %d %v: lookup(%q) = %d, %v; want %d, %v", round, cands, q, gi, gok, wi, wok)
			}
		}
	}
	if conflicts == 0 || conflicts == 20000 {
		t.Fatalf("%d of 20000 rounds conflicted: the draw tests too little", conflicts)
	}
}
