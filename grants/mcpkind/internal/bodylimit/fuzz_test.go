package bodylimit

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/grants/mcpkind/internal/msglimit"
)

// FuzzEvents reads a fuzzed event stream, as a server sends it, with a
// fuzzed limit, on a stream that answers one call and on one that serves a
// session. Reading may not panic, and:
//
//   - what is handed on is handed on event by event, none over the limit
//     but the refusals the reader writes, which are well-formed JSON-RPC
//     errors carrying msglimit's code;
//   - a stream of no more than limit bytes is handed on unchanged;
//   - on the stream of one call, what is handed on is the stream up to the
//     event over the limit, then at most one refusal of that call, and the
//     body is closed there.
func FuzzEvents(f *testing.F) {
	big := strings.Repeat("x", 300)
	for _, s := range []string{
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n",
		"id: 42\ndata: {\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"" + big + "\"}]},\ndata: \"jsonrpc\":\"2.0\",\"id\":2}\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"" + big + "\"}}\n\n",
		"event: other\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":\"" + big + "\"}\n\n",
		"data:{\"jsonrpc\":\"2.0\",\"id\":\"four\",\"result\":\"" + big + "\"}\r\n\r\n",
		": a comment\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":5,\"result\":{}}\n\n",
		"data: [{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":\"" + big + "\"},{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{}}]\n\n",
		"id: " + big + "\nevent: " + big + "\ndata: {\"id\":8,\"result\":\"" + big + "\"}\n\n",
		"retry: 10\nid\nevent\ndata\n\ndata: no end",
		"data: {\"jsonrpc\":\"2.0\",\"id\":9,\"result\":\"" + big + "\\\"\\u0000\"}\n\n",
	} {
		f.Add([]byte(s), uint16(64), false)
		f.Add([]byte(s), uint16(64), true)
		f.Add([]byte(s+s), uint16(len(s)), false)
	}
	f.Fuzz(func(t *testing.T, stream []byte, limit16 uint16, oneCall bool) {
		limit := 1 + int(limit16)%8192
		body := &closeCounter{Reader: bytes.NewReader(stream)}
		var call func() json.RawMessage
		if oneCall {
			call = func() json.RawMessage { return json.RawMessage("7") }
		}
		e := newEvents(body, limit, call)
		var out []byte
		refusals := 0
		for e.err == nil {
			e.next()
			ev := e.event.AppendTo(nil)
			e.event.Reset()
			if len(ev) > limit || oneCall && e.err == io.EOF && body.closed > 0 {
				n, ok := refusalEvents(ev)
				if !ok {
					t.Fatalf("handed on %d bytes, over the limit of %d, that are not refusals: %.300q", len(ev), limit, ev)
				}
				refusals += n
			}
			out = append(out, ev...)
		}
		if len(stream) <= limit && !bytes.Equal(out, stream) {
			t.Fatalf("a stream within the limit changed:\nin  %.300q\nout %.300q", stream, out)
		}
		if oneCall {
			kept := out
			if body.closed > 0 {
				if refusals > 1 {
					t.Fatalf("%d refusals of one call", refusals)
				}
				if i := bytes.LastIndex(out, []byte("data: {\"jsonrpc\":\"2.0\",\"id\":7,")); i >= 0 {
					kept = out[:i]
				}
			}
			if !bytes.HasPrefix(stream, kept) {
				t.Fatalf("the stream of one call was not handed on as it came:\nin  %.300q\nout %.300q", stream, out)
			}
		}
	})
}

// refusalEvents reports whether ev is made only of events as writeEvent
// writes a refusal, and how many.
func refusalEvents(ev []byte) (int, bool) {
	n := 0
	for len(ev) > 0 {
		block, rest, ok := bytes.Cut(ev, []byte("\n\n"))
		if !ok {
			return n, false
		}
		ev = rest
		if bytes.HasPrefix(block, []byte("id: ")) {
			_, block, _ = bytes.Cut(block, []byte("\n"))
		}
		data, ok := bytes.CutPrefix(block, []byte("data: "))
		if !ok {
			return n, false
		}
		var r struct {
			JSONRPC string `json:"jsonrpc"`
			ID      any    `json:"id"`
			Error   *struct {
				Code int64 `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &r) != nil || r.JSONRPC != "2.0" || r.ID == nil || r.Error == nil || r.Error.Code != msglimit.Code {
			return n, false
		}
		n++
	}
	return n, true
}

// closeCounter is a body that counts its closes.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }
