package resultcap

// Tests that resultSizeBound, the shortcut Cap takes, decides as
// json.Marshal, the slow path it skips, and that Cap cuts what is too large.

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/internal/jsonrand"
)

func TestResultSizeBound(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	strs := []string{"", "plain", "<>&\u2028\x01", "\xff\xfe", strings.Repeat("é", 50)}
	for range 5000 {
		res := &mcp.CallToolResult{IsError: r.IntN(2) == 0}
		for range r.IntN(4) {
			var meta mcp.Meta
			if r.IntN(3) == 0 {
				meta = mcp.Meta{"k": jsonrand.Value(r, 0)}
			}
			switch r.IntN(3) {
			case 0:
				res.Content = append(res.Content, &mcp.TextContent{Text: strs[r.IntN(len(strs))], Meta: meta})
			case 1:
				res.Content = append(res.Content, &mcp.ImageContent{Data: make([]byte, r.IntN(10)), MIMEType: "image/png", Meta: meta})
			case 2:
				res.Content = append(res.Content, &mcp.AudioContent{Data: make([]byte, r.IntN(10)), MIMEType: strs[r.IntN(len(strs))], Meta: meta})
			}
		}
		if r.IntN(2) == 0 {
			res.StructuredContent = jsonrand.Value(r, 0)
		}
		if r.IntN(3) == 0 {
			res.Meta = mcp.Meta{"code": strs[r.IntN(len(strs))], "nested": jsonrand.Object(r, 0)}
		}
		if r.IntN(4) == 0 {
			res.RequestState = strs[r.IntN(len(strs))]
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := resultSizeBound(res, 1<<20)
		if !ok {
			t.Fatalf("no bound for %s", b)
		}
		if n < len(b) {
			t.Fatalf("bound %d below size %d of %s", n, len(b), b)
		}
		if _, ok := resultSizeBound(res, len(b)-1); ok && n > len(b)-1 {
			t.Fatalf("a bound over the limit was reported as ok")
		}
	}
	// What the bound does not know is left to json.Marshal.
	for _, res := range []*mcp.CallToolResult{
		{Content: []mcp.Content{&mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{}}}},
		{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///x", Name: "x"}}},
		{StructuredContent: struct{ A int }{1}},
		{StructuredContent: map[string]any{"x": math.NaN()}},
		{Meta: mcp.Meta{"x": 1}},
	} {
		if _, ok := resultSizeBound(res, 1<<20); ok {
			t.Errorf("resultSizeBound(%+v) gave a bound", res)
		}
	}
}

// TestCap: a result that fits comes back as it is, whether the bound or
// json.Marshal settles it; one that does not is cut to fit, keeping what
// fits and saying what it left out.
func TestCap(t *testing.T) {
	small := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}
	if Cap(small, 1<<10) != small || Cap(small, 0) != small || Cap(nil, 10) != nil {
		t.Error("a result within its cap was replaced")
	}
	link := &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///x", Name: "x"}}}
	if Cap(link, 1<<10) != link {
		t.Error("a result the bound does not know, within its cap, was replaced")
	}
	big := &mcp.CallToolResult{
		Meta: mcp.Meta{"k": "v"},
		Content: []mcp.Content{
			&mcp.TextContent{Text: "first"},
			&mcp.TextContent{Text: strings.Repeat("é", 2000)},
			&mcp.ImageContent{Data: make([]byte, 1000), MIMEType: "image/png"},
		},
		StructuredContent: map[string]any{"rows": strings.Repeat("x", 2000)},
	}
	const max = 1500
	got := Cap(big, max)
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > max {
		t.Errorf("capped to %d bytes, over %d", len(b), max)
	}
	if len(got.Content) != 3 || got.Content[0].(*mcp.TextContent).Text != "first" || got.StructuredContent != nil || got.Meta["k"] != "v" {
		t.Fatalf("capped result: %s", b)
	}
	cut := got.Content[1].(*mcp.TextContent).Text
	if cut == "" || len(cut) >= 4000 || !strings.HasPrefix(strings.Repeat("é", 2000), cut) {
		t.Errorf("the long text was cut to %d bytes, or not at a character", len(cut))
	}
	note := got.Content[2].(*mcp.TextContent).Text
	if !strings.Contains(note, "max_result_bytes (1500)") || !strings.Contains(note, "2 part(s) omitted") {
		t.Errorf("note: %q", note)
	}
	if len(big.Content) != 3 || big.StructuredContent == nil {
		t.Error("Cap modified its argument")
	}
}

// TestHardLimit: four times the cap, never under 4 MiB, and no overflow.
func TestHardLimit(t *testing.T) {
	for _, tc := range []struct{ max, want int }{
		{1, 4 << 20},
		{4096, 4 << 20},
		{1 << 20, 4 << 20},
		{3 << 20, 12 << 20},
		{math.MaxInt / 2, math.MaxInt},
	} {
		if got := HardLimit(tc.max); got != tc.want {
			t.Errorf("HardLimit(%d) = %d, want %d", tc.max, got, tc.want)
		}
	}
}

// TestCapSkipsEncoding: a part whose text alone is over the cap is cut
// without being encoded, and so is a result whose text is: capping a 4 MiB
// text to 1 MiB allocates almost nothing, where encoding it would allocate
// several times its size.
func TestCapSkipsEncoding(t *testing.T) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 4<<20)}}}
	var got *mcp.CallToolResult
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got = Cap(res, 1<<20)
	runtime.ReadMemStats(&after)
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 64<<10 {
		t.Errorf("capping a 4 MiB text allocated %d KiB", allocated>>10)
	}
	if b, _ := json.Marshal(got); len(b) > 1<<20 || len(got.Content) != 2 {
		t.Errorf("capped to %d bytes, %d parts", len(b), len(got.Content))
	}
}

// TestCapAsEncoding: Cap decides on random results and caps as it would by
// encoding every result and part it considers.
func TestCapAsEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		res := &mcp.CallToolResult{}
		for range r.IntN(5) {
			switch r.IntN(3) {
			case 0:
				res.Content = append(res.Content, &mcp.TextContent{Text: strings.Repeat("é<", r.IntN(600))})
			case 1:
				res.Content = append(res.Content, &mcp.ImageContent{Data: make([]byte, r.IntN(900)), MIMEType: "image/png"})
			case 2:
				res.Content = append(res.Content, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///x", Text: strings.Repeat("y", r.IntN(900))}})
			}
		}
		if r.IntN(2) == 0 {
			res.StructuredContent = jsonrand.Value(r, 0)
		}
		max := 300 + r.IntN(3000)
		got, _ := json.Marshal(Cap(res, max))
		want, _ := json.Marshal(capByEncoding(res, max))
		if string(got) != string(want) {
			t.Fatalf("cap %d:\n got %s\nwant %s", max, got, want)
		}
	}
}

// capByEncoding is Cap as it was before it skipped encoding what cannot
// fit.
func capByEncoding(res *mcp.CallToolResult, max int) *mcp.CallToolResult {
	if b, err := json.Marshal(res); err == nil && len(b) <= max {
		return res
	}
	out := &mcp.CallToolResult{Meta: res.Meta, IsError: res.IsError}
	budget := max - 256
	omitted := 0
	for _, c := range res.Content {
		b, err := json.Marshal(c)
		if err != nil {
			omitted++
			continue
		}
		if len(b) <= budget {
			out.Content = append(out.Content, c)
			budget -= len(b)
			continue
		}
		if t, ok := c.(*mcp.TextContent); ok && budget > 64 {
			out.Content = append(out.Content, &mcp.TextContent{Text: cutUTF8(t.Text, budget-64), Annotations: t.Annotations})
			budget = 0
			continue
		}
		omitted++
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil && len(b) <= budget {
			out.StructuredContent = res.StructuredContent
		} else {
			omitted++
		}
	}
	out.Content = append(out.Content, &mcp.TextContent{Text: fmt.Sprintf(
		"[heddle: the result was larger than max_result_bytes (%d) and was cut; %d part(s) omitted]", max, omitted)})
	return out
}
