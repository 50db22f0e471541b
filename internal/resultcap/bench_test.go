package resultcap

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchResults are results that fit under a 1 MiB cap, as tools return them.
func benchResults() []struct {
	name string
	res  *mcp.CallToolResult
} {
	rows := make([]any, 50)
	for i := range rows {
		rows[i] = map[string]any{"id": fmt.Sprintf("INC-%d", i), "title": "disk full on db-7", "severity": float64(i % 5), "open": i%2 == 0}
	}
	return []struct {
		name string
		res  *mcp.CallToolResult
	}{
		{"echo", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, heddle"}}, StructuredContent: map[string]any{"text": "hello, heddle"}}},
		{"text-4KB", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("A runbook line of text.\n", 170)}}}},
		{"rows-50", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "50 rows"}}, StructuredContent: map[string]any{"rows": rows}}},
		{"image-64KB", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: make([]byte, 64<<10), MIMEType: "image/png"}}}},
	}
}

// BenchmarkSizeBound settles whether a result fits under its cap, with the
// bound (heddle) and by encoding it as Cap otherwise must (json.Marshal), in
// the same run.
func BenchmarkSizeBound(b *testing.B) {
	const max = 1 << 20
	for _, c := range benchResults() {
		b.Run(c.name+"/heddle", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if n, ok := resultSizeBound(c.res, max); !ok || n > max {
					b.Fatal("no bound")
				}
			}
		})
		b.Run(c.name+"/json.Marshal", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if raw, err := json.Marshal(c.res); err != nil || len(raw) > max {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCap is Cap of echo's result under a 1 MiB cap: what a call pays.
func BenchmarkCap(b *testing.B) {
	res := benchResults()[0].res
	b.ReportAllocs()
	for b.Loop() {
		Cap(res, 1<<20)
	}
}

// BenchmarkCapOver caps a 3.75 MiB text to 1 MiB, as Cap does (heddle) and
// by encoding the result and its part to measure them (encoding), in the
// same run: what a result between the cap and the hard limit pays.
func BenchmarkCapOver(b *testing.B) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 3840<<10)}}}
	for _, side := range []struct {
		name string
		cap  func(*mcp.CallToolResult, int) *mcp.CallToolResult
	}{{"heddle", Cap}, {"encoding", capByEncoding}} {
		b.Run(side.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if len(side.cap(res, 1<<20).Content) != 2 {
					b.Fatal("not cut")
				}
			}
		})
	}
}
