package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/wire"
)

// TestResult: a result is answered as the tool wrote it — <, > and &
// unescaped, an escaped backslash before "u003c" kept, every digit of a
// large number kept — with isError present whether or not it is false.
func TestResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `<a & b>`}}},
			`{"content":[{"type":"text","text":"<a & b>"}],"isError":false}`},
		{"escaped backslash", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `\u003c is <`}}},
			`{"content":[{"type":"text","text":"\\u003c is <"}],"isError":false}`},
		{"large number", &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: json.RawMessage(`{"id":12345678901234567890}`)},
			`{"content":[],"structuredContent":{"id":12345678901234567890},"isError":false}`},
		{"error", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no"}}, IsError: true},
			`{"content":[{"type":"text","text":"no"}],"isError":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, ok := wire.Result(tc.res).(json.RawMessage)
			if !ok || string(raw) != tc.want {
				t.Errorf("Result = %s, want %s", raw, tc.want)
			}
		})
	}
}
