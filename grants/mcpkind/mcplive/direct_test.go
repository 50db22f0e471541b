package mcplive

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resultCases are tools/call results a server may send: text, other kinds
// of block, resultTypes, members of every kind, and what does not decode.
var resultCases = []string{
	`{"content":[{"type":"text","text":"hello, heddle"}],"structuredContent":{"text":"hello, heddle"}}`,
	`{"content":[{"type":"text","text":"a","_meta":{"k":1},"annotations":{"audience":["user"],"priority":0.5}}],"isError":true,"_meta":{"m":"v"}}`,
	`{"content":[],"resultType":"complete"}`,
	`{"content":[{"type":"text","text":"x"}],"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object"}}}},"requestState":"s"}`,
	`{"content":null}`,
	`{}`,
	`{"content":[null]}`,
	`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`,
	`{"content":[{"type":"text","text":"a"},{"type":"resource_link","uri":"file:///x","name":"x"}]}`,
	`{"content":[{"type":"text","text":"a","data":"not base64!"}]}`,
	`{"content":[{"type":"nope"}]}`,
	`{"content":[{"type":"text","text":1}]}`,
	`{"content":{"type":"text","text":"single"}}`,
	`{"Content":[{"type":"text","text":"case"}]}`,
	`{"content":[{"type":"text","text":"a"}],"resultType":"other"}`,
	`{"content":[{"type":"text","text":"a"}],"structuredContent":[1,2,{"a":null}],"requestState":"r"}`,
	`[]`,
	`null`,
	`{"content":[{"type":"text","text":"a"}]} trailing`,
}

// sameResult reports how decodeResult and go-sdk's decoding differ on raw,
// or "" when they agree: both fail, or both make equal results (unexported
// members included).
func sameResult(raw []byte) string {
	got, gerr := decodeResult(raw)
	want := new(mcp.CallToolResult)
	werr := json.Unmarshal(raw, want)
	switch {
	case gerr != nil && werr != nil:
		return ""
	case gerr != nil:
		return fmt.Sprintf("ours failed (%v), go-sdk's decoded %#v", gerr, want)
	case werr != nil:
		return fmt.Sprintf("ours decoded %#v, go-sdk's failed (%v)", got, werr)
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("ours %#v, go-sdk's %#v", got, want)
	}
	if got.NeedsInput() != want.NeedsInput() {
		return "NeedsInput differs"
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if string(a) != string(b) {
		return fmt.Sprintf("encode to %s and %s", a, b)
	}
	return ""
}

// TestDecodeResult: a call's result decodes as go-sdk decodes it.
func TestDecodeResult(t *testing.T) {
	for _, c := range resultCases {
		if d := sameResult([]byte(c)); d != "" {
			t.Errorf("%s: %s", c, d)
		}
	}
}

// FuzzDecodeResult compares decodeResult with go-sdk's decoding on any
// input.
func FuzzDecodeResult(f *testing.F) {
	for _, c := range resultCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if d := sameResult(raw); d != "" {
			t.Fatalf("%q: %s", raw, d)
		}
	})
}
