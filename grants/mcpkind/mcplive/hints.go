package mcplive

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// go-sdk decodes readOnlyHint into a plain bool, so a tool whose server
// said nothing of it reads as readOnlyHint: false — destructive, by MCP's
// rule, unless it has a destructiveHint — and a tool annotated with a title
// only would be held for approval. The rule needs to know which hints the
// server sent. heddle sees the messages on the transports it builds before
// go-sdk decodes them, through the connections of the transports (wireConn:
// heddle's own over stdio and Streamable HTTP, go-sdk's over legacy SSE). Each
// tools/list result is read there for the hints each tool carried, and the
// server keeps them (wireHints) for the classification of its tools.

// sentHints says which of a tool's hints its server sent (null counts as
// not sent).
type sentHints struct {
	readOnly, destructive bool
}

// maxWireTools bounds the tools a server's wireHints remembers: a server
// that renames its tools forever does not grow it without end.
const maxWireTools = 1 << 14

// wireHints is what the server's tools/list results said, per tool name:
// the latest listing's word. It is safe for concurrent use.
type wireHints struct {
	mu sync.Mutex
	m  map[string]sentHints
}

// sent returns the hints the server sent for the tool called name; ok is
// false when no listing heddle saw named it (a transport heddle does not
// see into, such as Kind.Dial's).
func (w *wireHints) sent(name string) (h sentHints, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h, ok = w.m[name]
	return h, ok
}

// record reads one tools/list result. A result that cannot be read is
// go-sdk's to refuse; it records nothing.
func (w *wireHints) record(result []byte) {
	var r struct {
		Tools []struct {
			Name        string                     `json:"name"`
			Annotations map[string]json.RawMessage `json:"annotations"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	given := func(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil || len(w.m)+len(r.Tools) > maxWireTools {
		w.m = make(map[string]sentHints, len(r.Tools))
	}
	for _, t := range r.Tools {
		w.m[t.Name] = sentHints{readOnly: given(t.Annotations["readOnlyHint"]), destructive: given(t.Annotations["destructiveHint"])}
	}
}

// wireTransport makes connections that show the server's tools/list
// results to hints.
type wireTransport struct {
	mcp.Transport
	hints *wireHints
	conn  *wireConn // the connection it made
}

func (t *wireTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.conn = &wireConn{Connection: conn, hints: t.hints}
	return t.conn, nil
}

// wireConn notes the ids of the tools/list requests it writes, and records
// the results that answer them as it reads them, before go-sdk decodes
// them. It also carries heddle's own tool calls (calls, direct.go).
type wireConn struct {
	mcp.Connection
	hints   *wireHints
	pending sync.Map // jsonrpc.ID → struct{}
	calls   calls
}

func (c *wireConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		if req.Method == "tools/list" && req.ID.IsValid() {
			c.pending.Store(req.ID, struct{}{})
		}
		c.calls.noteRequest(req)
	}
	return c.Connection.Write(ctx, msg)
}

func (c *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.calls.ended(err)
			return msg, err
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok {
			return msg, nil
		}
		if c.calls.take(resp) {
			continue
		}
		if _, asked := c.pending.LoadAndDelete(resp.ID); asked && resp.Error == nil {
			c.hints.record(resp.Result)
		}
		return msg, nil
	}
}

// requestHead reads the start of a copy of req's body, up to len(buf)
// bytes, into buf; body is the rest of the copy, for the caller to close,
// nil when req has no copy to read.
func requestHead(req *http.Request, buf []byte) (head []byte, body io.ReadCloser) {
	if req.GetBody == nil {
		return nil, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, nil
	}
	n, _ := io.ReadFull(body, buf)
	return buf[:n], body
}

var (
	_ mcp.Transport  = (*wireTransport)(nil)
	_ mcp.Connection = (*wireConn)(nil)
)
