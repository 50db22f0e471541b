package jsonmsg

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// echoLine is the message a server sends for the echo tool's result: what
// most of a call's incoming bytes look like.
const echoLine = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello, heddle"}],"structuredContent":{"text":"hello, heddle"}}}`

// BenchmarkDecode decodes one tools/call response with Decode (heddle) and
// with go-sdk's jsonrpc.DecodeMessage (go-sdk), the decoding alone.
func BenchmarkDecode(b *testing.B) {
	line := []byte(echoLine)
	for _, side := range []struct {
		name   string
		decode func([]byte) (jsonrpc.Message, error)
	}{
		{"heddle", Decode},
		{"go-sdk", jsonrpc.DecodeMessage},
	} {
		b.Run(side.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := side.decode(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
