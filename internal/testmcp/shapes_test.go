package testmcp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAnnotationShapes: over Streamable HTTP, answering with event streams
// and with JSON bodies, and over SSE, each hints_* tool goes on the wire
// with exactly the annotations of its shape (and hints_none with none),
// though go-sdk would send readOnlyHint and idempotentHint for every tool.
func TestAnnotationShapes(t *testing.T) {
	for _, json := range []bool{false, true} {
		ts := httptest.NewServer(Handler(&Options{AnnotationShapes: true, NoFixedTools: true, JSONResponse: json}))
		t.Cleanup(ts.Close)
		for _, path := range []string{StreamablePath, SSEPath} {
			wire := &bodies{next: &http.Transport{}}
			t.Cleanup(wire.next.(*http.Transport).CloseIdleConnections)
			hc := &http.Client{Transport: wire}
			var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: ts.URL + path, HTTPClient: hc}
			if path == SSEPath {
				tr = &mcp.SSEClientTransport{Endpoint: ts.URL + path, HTTPClient: hc}
			}
			cs := connectTransport(t, tr, nil)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tools) != len(AnnotationShapes) {
				t.Fatalf("%s: %d tools, want %d", path, len(res.Tools), len(AnnotationShapes))
			}
			got := wire.all()
			for name, shape := range AnnotationShapes {
				want := `{"description":"Listed with the annotations its name says.","inputSchema":{"type":"object"},"name":"` + name + `"}`
				if shape != "" {
					want = `{"annotations":` + shape + `,` + want[1:]
				}
				if !bytes.Contains(got, []byte(want)) {
					t.Errorf("json %v, %s: %s is not on the wire as %s", json, path, name, want)
				}
			}
			if t.Failed() {
				t.Logf("the wire:\n%s", got)
			}
		}
	}
}

// bodies keeps what the answers' bodies carried as the client read them.
type bodies struct {
	next http.RoundTripper
	mu   sync.Mutex
	buf  bytes.Buffer
}

func (b *bodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(resp.Body, lockedWriter{b}), resp.Body}
	}
	return resp, err
}

type lockedWriter struct{ b *bodies }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	return w.b.buf.Write(p)
}

func (b *bodies) all() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
