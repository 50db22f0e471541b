package runtime

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testSearchIndex indexes tools as deferred entries of a built index.
func testSearchIndex(tools ...*mcp.Tool) (*searchIndex, func(int) string) {
	bi := &builtIndex{}
	for _, tl := range tools {
		bi.entries = append(bi.entries, &entry{def: &toolDef{tool: tl}, tool: Tool{
			Name: tl.Name, OriginalName: tl.Name, Description: tl.Description, Deferred: true,
		}})
	}
	// A tool that is not deferred is never found.
	bi.entries = append(bi.entries, &entry{def: &toolDef{tool: &mcp.Tool{Name: "listed"}}, tool: Tool{
		Name: "listed", Description: "restart deployments, list incidents, search runbooks",
	}})
	return newSearchIndex(bi), func(i int) string { return bi.entries[i].tool.Name }
}

func TestTokenize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"get_incident", []string{"get", "incident"}},
		{"getIncident", []string{"get", "incident"}},
		{"search-runbooks v2", []string{"search", "runbook", "v2"}},
		{"Open incidents, at or above a severity.", []string{"open", "incident", "at", "or", "above", "a", "severity"}},
		{"access class gas", []string{"access", "class", "gas"}},
		{"Überprüfe die Zugänge", []string{"überprüfe", "die", "zugänge"}},
		{"a\xffb", []string{"a", "b"}},
	} {
		if got := tokenize(c.in, maxQueryBytes, -1); !slices.Equal(got, c.want) {
			t.Errorf("tokenize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Distinct words, at most maxTerms of them.
	if got := tokenize("a b a c d", 100, 3); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("tokenize with 3 terms = %q", got)
	}
	if got := tokenize(strings.Repeat("word ", 1000), maxQueryBytes, maxQueryTerms); !slices.Equal(got, []string{"word"}) {
		t.Errorf("a repeated word = %q", got)
	}
	if got := tokenize("abcdef", 3, -1); !slices.Equal(got, []string{"abc"}) {
		t.Errorf("tokenize bounded to 3 bytes = %q", got)
	}
}

func TestSearchRanking(t *testing.T) {
	idx, names := testSearchIndex(
		&mcp.Tool{Name: "restart_deployment", Description: "Restarts a deployment's pods one at a time."},
		&mcp.Tool{Name: "scale_deployment", Description: "Sets the number of replicas of a deployment."},
		&mcp.Tool{Name: "get_incident", Description: "Returns one incident with its timeline."},
		&mcp.Tool{Name: "open_incidents", Description: "Lists the open incidents at or above a severity."},
		&mcp.Tool{Name: "search_runbooks", Title: "Runbook search", Description: "Finds runbooks by words."},
		&mcp.Tool{Name: "page_oncall", Description: "Pages whoever is on call for a service.", Annotations: &mcp.ToolAnnotations{Title: "Pager"}},
	)
	search := func(q string, limit int) []string {
		var out []string
		for _, i := range idx.search(q, limit, names) {
			out = append(out, names(i))
		}
		return out
	}
	for _, c := range []struct {
		query string
		limit int
		want  []string
	}{
		// A word of the name outranks the same word in a description.
		{"restart", 5, []string{"restart_deployment"}},
		{"scale", 5, []string{"scale_deployment"}},
		// Plurals and camel case meet singulars and snake case.
		{"openIncident", 5, []string{"open_incidents", "get_incident"}},
		{"replicas", 5, []string{"scale_deployment"}},
		// A description's word alone finds its tool.
		{"timeline", 5, []string{"get_incident"}},
		// Titles count, the annotations' too.
		{"pager", 5, []string{"page_oncall"}},
		{"runbook", 5, []string{"search_runbooks"}},
		// More of the query's words rank higher.
		{"severity incident", 1, []string{"open_incidents"}},
		{"timeline incident", 1, []string{"get_incident"}},
		// Nothing for words no tool has.
		{"kubernetes", 5, nil},
		{"", 5, nil},
		{"!!! ???", 5, nil},
	} {
		if got := search(c.query, c.limit); !slices.Equal(got, c.want) {
			t.Errorf("search(%q, %d) = %v, want %v", c.query, c.limit, got, c.want)
		}
	}
	// Bounded by limit.
	if got := search("deployment incident", 5); len(got) != 4 {
		t.Errorf("search(deployment incident, 5) = %v, want 4 tools", got)
	}
	if got := search("deployment incident", 2); len(got) != 2 {
		t.Errorf("search(deployment incident, 2) = %v, want 2 tools", got)
	}
	if got := search("deployment", 0); got != nil {
		t.Errorf("limit 0 = %v", got)
	}
}

func TestSearchNoDeferredTools(t *testing.T) {
	idx := newSearchIndex(&builtIndex{})
	if got := idx.search("anything", 5, func(int) string { return "" }); got != nil {
		t.Errorf("search of an empty index = %v", got)
	}
}

// FuzzSearch: any query (and any tool text) is tokenized and searched
// without panicking, within the bounds: at most maxQueryTerms distinct
// query words of valid UTF-8, at most limit results, each a deferred tool.
func FuzzSearch(f *testing.F) {
	for _, s := range []string{"", "restart deployment", "getIncident", "a\xff\xfe", strings.Repeat("x ", 600), "ÜBER straße 東京"} {
		f.Add(s, "Restarts a deployment's pods.", 3)
	}
	f.Fuzz(func(t *testing.T, query, desc string, limit int) {
		terms := tokenize(query, maxQueryBytes, maxQueryTerms)
		if len(terms) > maxQueryTerms {
			t.Fatalf("%d terms, bound %d", len(terms), maxQueryTerms)
		}
		for _, w := range terms {
			if w == "" || !utf8.ValidString(w) {
				t.Fatalf("term %q", w)
			}
		}
		idx, names := testSearchIndex(
			&mcp.Tool{Name: "a_tool", Description: desc},
			&mcp.Tool{Name: "b_tool", Description: query},
		)
		hits := idx.search(query, limit, names)
		if len(hits) > max(limit, 0) || len(hits) > 2 {
			t.Fatalf("%d hits, limit %d", len(hits), limit)
		}
		for _, h := range hits {
			if n := names(h); n == "listed" {
				t.Fatalf("a tool that is not deferred was found")
			}
		}
	})
}
