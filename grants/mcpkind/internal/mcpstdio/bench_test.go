package mcpstdio

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoResult is the line a server sends for the echo tool's result: what
// most of a stdio call's incoming bytes look like.
const echoResult = `{"content":[{"type":"text","text":"hello, heddle"}],"structuredContent":{"text":"hello, heddle"}}`

// BenchmarkRoundTrip writes one tools/call response to cat and reads it
// back, through this transport (heddle) and through go-sdk's
// CommandTransport (go-sdk), in the same run. B/op counts this process
// only: the framing's own cost, both directions.
func BenchmarkRoundTrip(b *testing.B) {
	for _, side := range []struct {
		name string
		t    func() mcp.Transport
	}{
		{"heddle", func() mcp.Transport { return NewTransport(exec.Command("cat"), &Options{Terminate: time.Second}) }},
		{"go-sdk", func() mcp.Transport {
			return &mcp.CommandTransport{Command: exec.Command("cat"), TerminateDuration: time.Second}
		}},
	} {
		b.Run(side.name, func(b *testing.B) {
			ctx := context.Background()
			c, err := side.t().Connect(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			id, _ := jsonrpc.MakeID(float64(1))
			msg := &jsonrpc.Response{ID: id, Result: json.RawMessage(echoResult)}
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Write(ctx, msg); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Read(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRoundTripLarge is BenchmarkRoundTrip with a 256 KiB result,
// longer than the reader's buffer: the line is gathered before it is
// decoded.
func BenchmarkRoundTripLarge(b *testing.B) {
	ctx := context.Background()
	c, err := NewTransport(exec.Command("cat"), &Options{Terminate: time.Second}).Connect(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	id, _ := jsonrpc.MakeID(float64(1))
	text, _ := json.Marshal(strings.Repeat("x", 256<<10))
	msg := &jsonrpc.Response{ID: id, Result: json.RawMessage(`{"content":[{"type":"text","text":` + string(text) + `}]}`)}
	b.SetBytes(int64(len(msg.Result)))
	b.ReportAllocs()
	for b.Loop() {
		// cat writes back while it reads: a result larger than the pipe
		// must be read while it is written.
		wrote := make(chan error, 1)
		go func() { wrote <- c.Write(ctx, msg) }()
		if _, err := c.Read(ctx); err != nil {
			b.Fatal(err)
		}
		if err := <-wrote; err != nil {
			b.Fatal(err)
		}
	}
}
