package runtime

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// capResult keeps a result within max bytes of JSON. Results are untrusted
// input: content kinds are kept (text, image, audio, resource links,
// embedded resources, structured content) as long as they fit; text is cut
// to fit, and what does not fit is replaced by a note saying so.
func capResult(res *mcp.CallToolResult, max int) *mcp.CallToolResult {
	if res == nil || max <= 0 {
		return res
	}
	if b, err := json.Marshal(res); err == nil && len(b) <= max {
		return res
	}
	out := &mcp.CallToolResult{Meta: res.Meta, IsError: res.IsError}
	budget := max - 256 // room for the envelope and the note
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
			cut := cutUTF8(t.Text, budget-64)
			out.Content = append(out.Content, &mcp.TextContent{Text: cut, Annotations: t.Annotations})
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

// cutUTF8 returns at most n bytes of s, not splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
