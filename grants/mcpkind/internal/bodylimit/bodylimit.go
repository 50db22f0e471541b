// Package bodylimit bounds what MCP HTTP clients read of a server's
// answers, from the http.RoundTripper they are given: heddle's Streamable
// HTTP transport (mcphttp) and go-sdk's legacy SSE client, which heddle does
// not own. Both read what they are sent whole — a JSON answer to its end,
// and an event up to a bound (MaxEventSize, MaxEventBytes: 16 MiB by
// default) past which they end the session — but every body they read comes
// to them through the RoundTripper, which can hand them a bounded one. A message over the limit is never handed on:
// the call it answers gets msglimit's refusal, and the session goes on.
//
// go-sdk reads an answer in one of three ways, and Transport bounds each:
//
//   - An application/json answer to a POST is read whole, and a failure to
//     read it ends the session. Transport reads it first, up to the limit:
//     an answer that fits is handed on from memory; the reading of a larger
//     one stops there, its connection is dropped, and RoundTrip fails with
//     the refusal, which go-sdk hands the call as its transport's error (it
//     wraps what RoundTrip returns) without ending the session.
//   - An event stream is read event by event. Transport hands each event on
//     once it is whole; an event over the limit is not handed on. On the
//     stream that answers a POST — one call — reading stops there: the
//     stream ends with an event of the transport's making, a JSON-RPC error
//     response to the call's id that carries the refusal. On a stream that
//     serves the whole session (the standalone GET of Streamable HTTP, the
//     one stream of the legacy SSE transport), the event is read through
//     without being held and dropped, and each response in it is answered
//     by such an event, its id found as it passed (msglimit.Scanner).
//   - Any other body (an error status, another media type) is cut at the
//     limit: go-sdk reads an error's body whole to find a JSON-RPC error in
//     it.
//
// go-sdk's own bound must not be the one that stops an event, since it ends
// the session: its clients' MaxEventSize should be EventSize(limit).
//
//	hc := &http.Client{Transport: bodylimit.Transport(http.DefaultTransport, limit)}
//	t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxEventSize: bodylimit.EventSize(limit)}
package bodylimit

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/heddlehq/heddle/grants/mcpkind/internal/msglimit"
)

// Transport returns a RoundTripper that sends requests with next and bounds
// each answer's body so that no message of more than limit bytes is handed
// on. It is safe for concurrent use when next is.
func Transport(next http.RoundTripper, limit int) http.RoundTripper {
	return &transport{next: next, limit: limit}
}

// EventSize is the MaxEventSize to give go-sdk's clients whose HTTP client
// uses Transport(…, limit): above every event Transport hands on.
func EventSize(limit int) int { return limit + 4<<10 }

type transport struct {
	next  http.RoundTripper
	limit int
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	switch mt := mediaType(resp.Header.Get("Content-Type")); {
	case ok && mt == "text/event-stream":
		var call func() json.RawMessage
		if req.Method == http.MethodPost {
			call = func() json.RawMessage { return requestID(req) }
		}
		resp.Body = newEvents(resp.Body, t.limit, call)
	case ok && mt == "application/json" && req.Method == http.MethodPost:
		return t.readJSON(resp)
	default:
		resp.Body = &cut{body: resp.Body, left: int64(t.limit)}
	}
	return resp, nil
}

// readJSON reads a JSON answer up to the limit, before go-sdk does.
func (t *transport) readJSON(resp *http.Response) (*http.Response, error) {
	if resp.ContentLength > int64(t.limit) {
		resp.Body.Close()
		return nil, msglimit.Refusal(t.limit)
	}
	if resp.ContentLength >= 0 {
		return resp, nil // net/http hands on no more than the length it announced
	}
	var buf msglimit.Buffer
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, int64(t.limit)+1))
	resp.Body.Close()
	switch {
	case err != nil:
		return nil, err
	case n > int64(t.limit):
		return nil, msglimit.Refusal(t.limit)
	}
	resp.Body, resp.ContentLength = io.NopCloser(&buf), n
	return resp, nil
}

// requestID is the JSON-RPC id of the request req sends, or nil: go-sdk's
// requests carry their body in a form net/http can read again.
func requestID(req *http.Request) json.RawMessage {
	if req.GetBody == nil {
		return nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.NewDecoder(body).Decode(&m) != nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return nil
	}
	return m.ID
}

// mediaType is the media type of a Content-Type, lower case, without
// parameters.
func mediaType(v string) string {
	if mt, _, err := mime.ParseMediaType(v); err == nil {
		return mt
	}
	mt, _, _ := strings.Cut(v, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// cut is a body that ends after a number of bytes.
type cut struct {
	body io.ReadCloser
	left int64
}

func (c *cut) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.body.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *cut) Close() error { return c.body.Close() }

var _ http.RoundTripper = (*transport)(nil)
