package mcplive

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/grants/mcpkind/internal/jsonmsg"
)

// A tool call is the one request heddle makes on every call, and go-sdk's
// session decodes its result with a streaming decoder made per value (and
// again per content block): most of what a call allocated, whatever the
// transport. So heddle sends tools/call on the connections of the
// transports it builds itself (wireConn) and reads the response there:
// the request as go-sdk's session would write it (its _meta of 2026-07-28
// taken from the requests the session itself sent), under an id of its own
// that go-sdk's never take, through the session's sending middleware
// (tracing), with notifications/cancelled sent when the caller gives up.
// A result whose content is text is decoded once, by decodeResult, into
// what go-sdk's decoding makes of it (TestDecodeResult,
// FuzzDecodeResult); any other goes to go-sdk's own decoding. Everything
// else the server sends, during a call or not, goes to go-sdk's session.

// callPrefix starts the ids of heddle's calls: strings, where go-sdk's
// session numbers its requests.
const callPrefix = "heddle-"

// calls is the direct-call half of a wireConn.
type calls struct {
	mu      sync.Mutex
	next    uint64
	waiting map[jsonrpc.ID]chan *jsonrpc.Response
	readErr error // set once Read failed: no response can come
	// meta is the _meta go-sdk's session puts on its requests (2026-07-28),
	// nil until one is seen; it is not changed once set.
	meta map[string]json.RawMessage
}

// noteRequest keeps the per-request _meta of a request go-sdk's session
// writes, once: every request of a session of 2026-07-28 carries the same
// protocolVersion, clientInfo and clientCapabilities.
func (c *calls) noteRequest(req *jsonrpc.Request) {
	// Not server/discover's: a revision it asks for may not be the one
	// settled.
	if req.Method == "server/discover" || !bytes.Contains(req.Params, []byte(`"io.modelcontextprotocol/protocolVersion"`)) {
		return
	}
	c.mu.Lock()
	done := c.meta != nil
	c.mu.Unlock()
	if done {
		return
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if jsonmsg.Parse(req.Params, &p) != nil {
		return
	}
	keep := map[string]json.RawMessage{}
	for _, k := range []string{"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/clientCapabilities"} {
		if v, ok := p.Meta[k]; ok {
			keep[k] = v
		}
	}
	c.mu.Lock()
	if c.meta == nil {
		c.meta = keep
	}
	c.mu.Unlock()
}

// take routes a response to the call waiting for it, and reports whether
// it was one of heddle's.
func (c *calls) take(resp *jsonrpc.Response) bool {
	s, ok := resp.ID.Raw().(string)
	if !ok || len(s) <= len(callPrefix) || s[:len(callPrefix)] != callPrefix {
		return false
	}
	c.mu.Lock()
	ch := c.waiting[resp.ID]
	delete(c.waiting, resp.ID)
	c.mu.Unlock()
	if ch != nil {
		ch <- resp
	}
	return true
}

// ended fails every call waiting: the connection's reading failed with err.
func (c *calls) ended(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readErr == nil {
		c.readErr = err
	}
	for id, ch := range c.waiting {
		ch <- &jsonrpc.Response{ID: id, Error: err}
		delete(c.waiting, id)
	}
}

// callTool sends a tools/call on the connection and waits for its result.
// newProtocol says whether the session speaks 2026-07-28, whose requests
// carry _meta; the caller has checked that it is known (ready).
func (w *wireConn) callTool(ctx context.Context, params *mcp.CallToolParams, newProtocol bool) (*mcp.CallToolResult, error) {
	c := &w.calls
	p := *params
	if p.Arguments == nil {
		p.Arguments = map[string]any{}
	}
	c.mu.Lock()
	meta := c.meta
	c.next++
	id, _ := jsonrpc.MakeID(callPrefix + strconv.FormatUint(c.next, 10))
	c.mu.Unlock()
	if newProtocol {
		merged := make(mcp.Meta, len(p.Meta)+len(meta))
		for k, v := range meta {
			merged[k] = v
		}
		maps.Copy(merged, p.Meta) // the call's own keys win, as go-sdk's do
		p.Meta = merged
	}
	body, err := json.Marshal(&p)
	if err != nil {
		return nil, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	req := &jsonrpc.Request{ID: id, Method: "tools/call", Params: body}
	var resp *jsonrpc.Response
	if dc, ok := w.Connection.(directCaller); ok {
		resp, err = dc.Call(ctx, req)
	} else {
		resp, err = w.await(ctx, req)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		// The request may have reached the server (over HTTP, sending
		// waits for the answer's headers, which a server may hold until
		// the result).
		w.cancel(ctx, id)
		return nil, ctx.Err()
	case err != nil:
		return nil, err
	case resp.Error != nil:
		return nil, fmt.Errorf("calling %q: %w", "tools/call", resp.Error)
	}
	res, err := decodeResult(resp.Result)
	if err != nil {
		return nil, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	return res, nil
}

// directCaller is a connection that reads a request's answer on the
// calling goroutine (mcphttp's): the response comes straight back, not
// through Read and go-sdk's reading goroutine.
type directCaller interface {
	Call(ctx context.Context, req *jsonrpc.Request) (*jsonrpc.Response, error)
}

// await writes req and waits for the response Read routes to it (take),
// on a connection whose messages all come through Read (stdio, SSE).
func (w *wireConn) await(ctx context.Context, req *jsonrpc.Request) (*jsonrpc.Response, error) {
	c := &w.calls
	ch := make(chan *jsonrpc.Response, 1)
	c.mu.Lock()
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: calling %q: %v", mcp.ErrConnectionClosed, "tools/call", err)
	}
	if c.waiting == nil {
		c.waiting = map[jsonrpc.ID]chan *jsonrpc.Response{}
	}
	c.waiting[req.ID] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, req.ID)
		c.mu.Unlock()
	}()
	if err := w.Connection.Write(ctx, req); err != nil {
		return nil, err
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// cancel tells the server that the call id's caller gave up, as go-sdk's
// session does: best effort, off the caller's path.
func (w *wireConn) cancel(ctx context.Context, id jsonrpc.ID) {
	go func() {
		nctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelNotifyTimeout)
		defer stop()
		params, _ := json.Marshal(&mcp.CancelledParams{Reason: ctx.Err().Error(), RequestID: id.Raw()})
		_ = w.Connection.Write(nctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
	}()
}

// cancelNotifyTimeout bounds the sending of notifications/cancelled.
const cancelNotifyTimeout = 5 * time.Second

// wireResult is a tools/call result as go-sdk's CallToolResult reads one:
// the result's own members, its content blocks in go-sdk's wire form of a
// block, and its resultType.
type wireResult struct {
	resultFields
	Content    []*wireBlock `json:"content"`
	ResultType string       `json:"resultType"`
}

// resultFields are CallToolResult's members (its methods left behind).
type resultFields mcp.CallToolResult

// wireBlock is a content block as go-sdk reads one, every member of every
// kind of block, so that a block decodes (or fails) here as it does there.
type wireBlock struct {
	Type              string                `json:"type"`
	Text              string                `json:"text,omitempty"`
	MIMEType          string                `json:"mimeType,omitempty"`
	Data              []byte                `json:"data,omitempty"`
	Resource          *mcp.ResourceContents `json:"resource,omitempty"`
	URI               string                `json:"uri,omitempty"`
	Name              string                `json:"name,omitempty"`
	Title             string                `json:"title,omitempty"`
	Description       string                `json:"description,omitempty"`
	Size              *int64                `json:"size,omitempty"`
	Meta              mcp.Meta              `json:"_meta,omitempty"`
	Annotations       *mcp.Annotations      `json:"annotations,omitempty"`
	Icons             []mcp.Icon            `json:"icons,omitempty"`
	ID                string                `json:"id,omitempty"`
	Input             map[string]any        `json:"input,omitempty"`
	ToolUseID         string                `json:"toolUseId,omitempty"`
	NestedContent     []*wireBlock          `json:"content,omitempty"`
	StructuredContent any                   `json:"structuredContent,omitempty"`
	IsError           bool                  `json:"isError,omitempty"`
}

// completeResult is a CallToolResult go-sdk decoded from resultType
// "complete": the form such a result takes (its resultType is go-sdk's own).
var completeResult = func() mcp.CallToolResult {
	var r mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[],"resultType":"complete"}`), &r); err != nil {
		panic(err)
	}
	return r
}()

// decodeResult decodes a tools/call result as go-sdk's CallToolResult
// decodes it. A result of text blocks (the common one) is decoded here,
// once; any other — another kind of block, another resultType — by
// go-sdk itself.
func decodeResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var w wireResult
	if err := jsonmsg.Parse(raw, &w); err == nil && (w.ResultType == "" || w.ResultType == "complete") {
		texts, ok := textBlocks(w.Content)
		if ok {
			var r mcp.CallToolResult
			if w.ResultType == "complete" {
				r = completeResult
			}
			r.Meta, r.StructuredContent, r.IsError = w.Meta, w.StructuredContent, w.IsError
			r.InputRequests, r.RequestState = w.InputRequests, w.RequestState
			r.Content = texts
			return &r, nil
		}
	}
	r := new(mcp.CallToolResult)
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, err
	}
	return r, nil
}

// textBlocks makes text content of blocks that are all text.
func textBlocks(blocks []*wireBlock) ([]mcp.Content, bool) {
	out := make([]mcp.Content, len(blocks))
	for i, b := range blocks {
		if b == nil || b.Type != "text" {
			return nil, false
		}
		out[i] = &mcp.TextContent{Text: b.Text, Meta: b.Meta, Annotations: b.Annotations}
	}
	return out, true
}

// wireOf is sess's connection when sess is the server's session and heddle
// built its transport, or nil.
func (s *server) wireOf(sess *mcp.ClientSession) *wireConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != sess {
		return nil
	}
	return s.wire
}

// callTool calls a tool over sess: on its connection (callTool of
// wireConn) when it can, through go-sdk's session otherwise. Either way the
// session's sending middleware (traced) sees the call.
func (s *server) callTool(ctx context.Context, sess *mcp.ClientSession, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	w := s.wireOf(sess)
	newProtocol := false
	if ir := sess.InitializeResult(); ir != nil && ir.ProtocolVersion >= "2026-07-28" {
		newProtocol = true
	}
	if w == nil || !w.calls.ready(newProtocol) {
		return sess.CallTool(ctx, params)
	}
	send := func(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		res, err := w.callTool(ctx, req.GetParams().(*mcp.CallToolParams), newProtocol)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	res, err := s.traced(send)(ctx, "tools/call", &mcp.ClientRequest[*mcp.CallToolParams]{Session: sess, Params: params})
	if err != nil {
		return nil, err
	}
	return res.(*mcp.CallToolResult), nil
}

// ready reports whether a call can be made on the connection: at
// 2026-07-28 only once the _meta of the session's requests is known.
func (c *calls) ready(newProtocol bool) bool {
	if !newProtocol {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.meta != nil
}
