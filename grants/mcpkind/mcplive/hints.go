package mcplive

import (
	"bytes"
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
// go-sdk decodes them: over stdio and legacy SSE through the connection
// (wireConn), over Streamable HTTP through the HTTP client (wireHTTP: go-sdk's
// Streamable connection has unexported methods a wrapper would hide). Each
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
// results to hints (stdio, legacy SSE: connections without optional
// methods to hide).
type wireTransport struct {
	mcp.Transport
	hints *wireHints
}

func (t *wireTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &wireConn{Connection: conn, hints: t.hints}, nil
}

// wireConn notes the ids of the tools/list requests it writes, and records
// the results that answer them as it reads them, before go-sdk decodes
// them.
type wireConn struct {
	mcp.Connection
	hints   *wireHints
	pending sync.Map // jsonrpc.ID → struct{}
}

func (c *wireConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/list" && req.ID.IsValid() {
		c.pending.Store(req.ID, struct{}{})
	}
	return c.Connection.Write(ctx, msg)
}

func (c *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		if _, asked := c.pending.LoadAndDelete(resp.ID); asked && resp.Error == nil {
			c.hints.record(resp.Result)
		}
	}
	return msg, err
}

// wireHTTP is an HTTP client transport that shows the answers to
// tools/list requests to hints: a JSON body, or the events of a stream, as
// go-sdk reads them. next bounds every message (bodylimit), and so what
// wireHTTP holds at once.
type wireHTTP struct {
	next  http.RoundTripper
	hints *wireHints
}

func (t *wireHTTP) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || !listsTools(req) || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	resp.Body = &wireBody{ReadCloser: resp.Body, hints: t.hints, stream: mediaIs(resp.Header.Get("Content-Type"), "text/event-stream")}
	return resp, nil
}

// listsTools reports a request whose body is a tools/list request. go-sdk
// writes the method before the params, so the body of any other request —
// a tool call's arguments — is looked at no further than its first bytes.
func listsTools(req *http.Request) bool {
	head, body := requestHead(req, make([]byte, 256))
	if body == nil {
		return false
	}
	defer body.Close()
	if !bytes.Contains(head, []byte(`"tools/list"`)) {
		return false
	}
	var m struct {
		Method string `json:"method"`
	}
	return json.NewDecoder(io.LimitReader(io.MultiReader(bytes.NewReader(head), body), 1<<16)).Decode(&m) == nil && m.Method == "tools/list"
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

func mediaIs(contentType, want string) bool {
	mt, _, _ := bytes.Cut([]byte(contentType), []byte(";"))
	return string(bytes.ToLower(bytes.TrimSpace(mt))) == want
}

// wireBody hands the body on unchanged, and records every response it
// carries once it is whole: a JSON body at its end, an event at the blank
// line that ends it, before go-sdk can have read either.
type wireBody struct {
	io.ReadCloser
	hints  *wireHints
	stream bool
	buf    []byte // the JSON body, or the event stream's current line and event
	data   []byte // the current event's data
	done   bool
}

func (b *wireBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.done {
		b.buf = append(b.buf, p[:n]...)
		if b.stream {
			b.lines()
		} else if err == io.EOF {
			b.message(b.buf)
			b.buf, b.done = nil, true
		}
	}
	return n, err
}

// Close records a JSON body read to its last byte but not to io.EOF.
func (b *wireBody) Close() error {
	if !b.done && !b.stream {
		b.message(b.buf)
	}
	b.buf, b.data, b.done = nil, nil, true
	return b.ReadCloser.Close()
}

// lines takes the complete lines of the stream from buf.
func (b *wireBody) lines() {
	for {
		i := bytes.IndexByte(b.buf, '\n')
		if i < 0 {
			return
		}
		line := bytes.TrimSuffix(b.buf[:i], []byte("\r"))
		switch {
		case len(line) == 0:
			b.message(b.data)
			b.data = b.data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if len(b.data) > 0 {
				b.data = append(b.data, '\n')
			}
			b.data = append(b.data, d...)
		}
		b.buf = b.buf[i+1:]
	}
}

// message records m when it is a response with a result.
func (b *wireBody) message(m []byte) {
	var r struct {
		Result json.RawMessage `json:"result"`
	}
	if len(m) > 0 && json.Unmarshal(m, &r) == nil && len(r.Result) > 0 {
		b.hints.record(r.Result)
	}
}

var (
	_ mcp.Transport     = (*wireTransport)(nil)
	_ mcp.Connection    = (*wireConn)(nil)
	_ http.RoundTripper = (*wireHTTP)(nil)
)
