package jsonmsg

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeCases are JSON-RPC lines a server may send, well formed or not.
var decodeCases = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`,
	`{"jsonrpc":"2.0","id":"a-1","result":{}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no such method","data":{"x":1}}}`,
	`{"jsonrpc":"2.0","id":7,"error":null,"result":1}`,
	`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
	`{"jsonrpc":"2.0","id":3,"method":"roots/list","params":{}}`,
	`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":2.5,"result":{}}`,
	`{"jsonrpc":"2.0","method":null}`,
	`{"jsonrpc":"2.0","method":""}`,
	` {"jsonrpc" : "2.0", "id" : 1 , "result" : [1, 2] } `,
	`{"jsonrpc":"1.0","id":1,"result":{}}`,
	`{"id":1,"result":{}}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","id":true,"result":{}}`,
	`{"jsonrpc":"2.0","id":{},"result":{}}`,
	`{"jsonrpc":"2.0","Method":"x","id":1}`,
	`{"JSONRPC":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","ID":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{}`,
	`[]`,
	`null`,
	`"text"`,
	`Content-Length: 12`,
	`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
	`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 990) + strings.Repeat("]", 990) + `}`,
	`{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("[", 2000) + `"}`,
}

// sameDecoding reports how Decode and go-sdk's DecodeMessage differ
// on data, or "" when they agree: both fail, or both return equal messages.
// data holds one JSON value (go-sdk's decoder would ignore what follows).
func sameDecoding(data []byte) string {
	got, gerr := Decode(data)
	want, werr := jsonrpc.DecodeMessage(data)
	switch {
	case gerr != nil && werr != nil:
		return ""
	case gerr != nil:
		return fmt.Sprintf("ours failed (%v), go-sdk's decoded %#v", gerr, want)
	case werr != nil:
		return fmt.Sprintf("ours decoded %#v, go-sdk's failed (%v)", got, werr)
	}
	if !reflect.DeepEqual(normalize(got), normalize(want)) {
		return fmt.Sprintf("ours %#v, go-sdk's %#v", got, want)
	}
	return ""
}

// normalize makes empty and absent raw JSON compare equal: both decoders
// leave an absent member nil, but go-sdk's may keep a zero-length one.
func normalize(m jsonrpc.Message) jsonrpc.Message {
	switch m := m.(type) {
	case *jsonrpc.Request:
		c := *m
		if len(c.Params) == 0 {
			c.Params = nil
		}
		return &c
	case *jsonrpc.Response:
		c := *m
		if len(c.Result) == 0 {
			c.Result = nil
		}
		return &c
	}
	return m
}

// TestDecodeMessage: the transport decodes every message as go-sdk
// does, and refuses what go-sdk refuses: keys match only in their own case
// ("Method" is no method), and nesting deeper than 1,000 levels is refused.
func TestDecodeMessage(t *testing.T) {
	for _, c := range decodeCases {
		if d := sameDecoding([]byte(c)); d != "" {
			t.Errorf("%.80s: %s", c, d)
		}
	}
	if m, err := Decode([]byte(`{"jsonrpc":"2.0","Method":"x","id":1}`)); err != nil {
		t.Error(err)
	} else if _, ok := m.(*jsonrpc.Response); !ok {
		t.Errorf("a \"Method\" made a request: %#v", m)
	}
	if _, err := Decode([]byte(`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`)); err == nil {
		t.Error("1,001 levels of nesting decoded")
	}
}

// FuzzDecodeMessage compares Decode with go-sdk's decoder on any
// single JSON value.
func FuzzDecodeMessage(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			if _, err := Decode(data); err == nil {
				t.Fatalf("decoded invalid JSON %q", data)
			}
			return
		}
		if d := sameDecoding(data); d != "" {
			t.Fatalf("%q: %s", data, d)
		}
	})
}

// TestDecodeCopies checks that a decoded message holds no part of the bytes
// it was decoded from: the transports reuse their buffers.
func TestDecodeCopies(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"a":"b"}}`,
		`{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m","data":{"d":1}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"m","params":{"p":[1,2]}}`,
	} {
		buf := []byte(line)
		m, err := Decode(buf)
		if err != nil {
			t.Fatal(err)
		}
		show := func(m jsonrpc.Message) string {
			if r, ok := m.(*jsonrpc.Response); ok && r.Error != nil {
				return fmt.Sprintf("%#v %#v", r, r.Error)
			}
			return fmt.Sprintf("%#v", m)
		}
		before := show(m)
		for i := range buf {
			buf[i] = ' '
		}
		if after := show(m); after != before {
			t.Errorf("%s: the message changed with the buffer it came from:\n%s\n%s", line, before, after)
		}
	}
}
