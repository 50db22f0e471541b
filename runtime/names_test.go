package runtime

import (
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
