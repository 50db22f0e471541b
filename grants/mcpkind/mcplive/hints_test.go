package mcplive

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// TestWireBody: the hints of a tools/list answer are recorded from a JSON
// body and from an event stream however the reads split it, with CRLF line
// ends and data on several lines; before the reader is handed the event's
// end, and without changing a byte of what it reads.
func TestWireBody(t *testing.T) {
	result := `{"tools":[{"name":"a","annotations":{"title":"t"}},{"name":"b","annotations":{"readOnlyHint":false}},` +
		`{"name":"c","annotations":{"readOnlyHint":null,"destructiveHint":true}},{"name":"d"}]}`
	msg := `{"jsonrpc":"2.0","id":3,"result":` + result + `}`
	cut := bytes.Index([]byte(msg), []byte(`"result":`)) + len(`"result":`) // where a line may end
	want := map[string]sentHints{"a": {}, "b": {readOnly: true}, "c": {destructive: true}, "d": {}}
	for name, tc := range map[string]struct {
		body   string
		stream bool
	}{
		"json":   {msg, false},
		"stream": {"event: message\r\nid: 1\r\ndata: " + msg[:cut] + "\r\ndata: " + msg[cut:] + "\r\n\r\n", true},
		"stream after a notification": {"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n" +
			"data: " + msg + "\n\n", true},
	} {
		for _, split := range []bool{false, true} {
			var h wireHints
			var r io.Reader = &wireBody{ReadCloser: io.NopCloser(bytes.NewReader([]byte(tc.body))), hints: &h, stream: tc.stream}
			if split {
				r = iotest.OneByteReader(r)
			}
			got, err := io.ReadAll(r)
			if err != nil || string(got) != tc.body {
				t.Fatalf("%s: read %q, %v; want the body unchanged", name, got, err)
			}
			for tool, w := range want {
				if s, ok := h.sent(tool); !ok || s != w {
					t.Errorf("%s (split %v): %s sent %+v, %v; want %+v", name, split, tool, s, ok, w)
				}
			}
		}
	}
	var h wireHints
	h.record([]byte(`{"tools":"not a list"}`))
	if _, ok := h.sent("a"); ok {
		t.Error("a result that cannot be read recorded hints")
	}
}

// FuzzWireBody: whatever a server answers a tools/list with, reading it
// through wireBody hands on the same bytes and never panics.
func FuzzWireBody(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","annotations":{"readOnlyHint":false}}]}}`), false)
	f.Add([]byte("data: {\"result\":{\"tools\":[{\"name\":\"a\"}]}}\r\n\r\ndata: x\n"), true)
	f.Add([]byte("data:\n\n\n\ndata: {\"result\":1}\n\n"), true)
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		var h wireHints
		got, err := io.ReadAll(iotest.HalfReader(&wireBody{ReadCloser: io.NopCloser(bytes.NewReader(body)), hints: &h, stream: stream}))
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("read %q, %v; want %q", got, err, body)
		}
	})
}
