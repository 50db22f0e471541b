package mcplive

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWireConn: the hints of a tools/list result are recorded as the
// connection reads it, before go-sdk decodes it; a result that answers
// another request, or an error, records nothing.
func TestWireConn(t *testing.T) {
	result := `{"tools":[{"name":"a","annotations":{"title":"t"}},{"name":"b","annotations":{"readOnlyHint":false}},` +
		`{"name":"c","annotations":{"readOnlyHint":null,"destructiveHint":true}},{"name":"d"}]}`
	var h wireHints
	inner := &scriptConn{in: []jsonrpc.Message{
		&jsonrpc.Response{ID: mustID(t, 2), Result: json.RawMessage(`{"tools":[{"name":"x","annotations":{"readOnlyHint":true}}]}`)},
		&jsonrpc.Response{ID: mustID(t, 1), Result: json.RawMessage(result)},
		&jsonrpc.Response{ID: mustID(t, 3), Error: &jsonrpc.Error{Code: 1, Message: "no"}},
	}}
	c := &wireConn{Connection: inner, hints: &h}
	ctx := context.Background()
	for i, method := range []string{"tools/list", "ping", "tools/list"} {
		if err := c.Write(ctx, &jsonrpc.Request{ID: mustID(t, int64(i+1)), Method: method}); err != nil {
			t.Fatal(err)
		}
	}
	for range inner.in {
		if _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]sentHints{"a": {}, "b": {readOnly: true}, "c": {destructive: true}, "d": {}}
	for tool, w := range want {
		if s, ok := h.sent(tool); !ok || s != w {
			t.Errorf("%s sent %+v, %v; want %+v", tool, s, ok, w)
		}
	}
	if _, ok := h.sent("x"); ok {
		t.Error("the result of a ping recorded hints")
	}
	h.record([]byte(`{"tools":"not a list"}`))
	if _, ok := h.sent("a"); !ok {
		t.Error("a result that cannot be read changed the hints")
	}
}

func mustID(t *testing.T, v int64) jsonrpc.ID {
	id, err := jsonrpc.MakeID(float64(v))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// scriptConn is a connection that reads the messages in in, in order.
type scriptConn struct {
	in []jsonrpc.Message
	n  int
}

func (s *scriptConn) Read(context.Context) (jsonrpc.Message, error) {
	m := s.in[s.n]
	s.n++
	return m, nil
}
func (s *scriptConn) Write(context.Context, jsonrpc.Message) error { return nil }
func (s *scriptConn) Close() error                                 { return nil }
func (s *scriptConn) SessionID() string                            { return "" }

var _ mcp.Connection = (*scriptConn)(nil)
