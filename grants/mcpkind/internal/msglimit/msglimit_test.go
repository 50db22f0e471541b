package msglimit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func id(v any) jsonrpc.ID {
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		panic(err)
	}
	return id
}

var big = strings.Repeat("x", 1000)

// scanCases are messages and the response ids a Scanner must find in them.
var scanCases = []struct {
	name string
	msg  string
	want []jsonrpc.ID
}{
	{"id first", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + big + `"}]}}`, []jsonrpc.ID{id(float64(7))}},
	{"id last", `{"result":{"content":[{"type":"text","text":"` + big + `"}]},"jsonrpc":"2.0","id":8}`, []jsonrpc.ID{id(float64(8))}},
	{"string id", ` { "jsonrpc" : "2.0" , "id" : "a-\"1\"" , "error" : {"code":1,"message":"m"} } `, []jsonrpc.ID{id(`a-"1"`)}},
	{"escaped name", `{"jsonrpc":"2.0","\u0069d":3,"result":{}}`, []jsonrpc.ID{id(float64(3))}},
	{"escapes in the result", `{"jsonrpc":"2.0","result":{"t":"\\\"}{,:\"id\":9,"},"id":4}`, []jsonrpc.ID{id(float64(4))}},
	{"nested ids are not the message's", `{"jsonrpc":"2.0","result":{"id":1,"x":[{"id":2}]},"id":5}`, []jsonrpc.ID{id(float64(5))}},
	{"the last id wins", `{"jsonrpc":"2.0","id":1,"result":{},"id":2}`, []jsonrpc.ID{id(float64(2))}},
	{"Method is no method", `{"jsonrpc":"2.0","Method":"x","id":6,"result":1}`, []jsonrpc.ID{id(float64(6))}},
	{"ID is no id", `{"jsonrpc":"2.0","ID":6,"result":1}`, nil},
	{"request", `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"x":"` + big + `"}}`, nil},
	{"notification", `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, nil},
	{"null id", `{"jsonrpc":"2.0","id":null,"result":{}}`, nil},
	{"object id", `{"jsonrpc":"2.0","id":{"a":1},"result":{}}`, nil},
	{"long id", `{"jsonrpc":"2.0","id":"` + strings.Repeat("9", 300) + `","result":{}}`, nil},
	{"batch", `[{"jsonrpc":"2.0","id":1,"result":{}}, 3, [{"id":9}], {"jsonrpc":"2.0","method":"m","id":2}, {"result":"` + big + `","jsonrpc":"2.0","id":"z"}]`, []jsonrpc.ID{id(float64(1)), id("z")}},
	{"scalar", `"` + big + `"`, nil},
	{"not JSON", `Starting server on stdio... {"id":1}`, nil},
	{"cut short", `{"jsonrpc":"2.0","id":1,"result":"` + big, nil},
}

// TestScanner: the ids of the responses in a message are found wherever they
// are in it, however the message is cut into pieces.
func TestScanner(t *testing.T) {
	for _, tc := range scanCases {
		for _, piece := range []int{1, 2, 7, 4096, len(tc.msg)} {
			var s Scanner
			msg := []byte(tc.msg)
			for len(msg) > 0 {
				k := min(piece, len(msg))
				if n, err := s.Write(msg[:k]); n != k || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
				msg = msg[k:]
			}
			if got := s.Responses(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s, in pieces of %d: responses %v, want %v", tc.name, piece, got, tc.want)
			}
		}
	}
}

// TestScannerAgreesWithGoSDK: on every single message of the cases, the
// Scanner finds the response go-sdk's decoder decodes, and none where it
// decodes a request.
func TestScannerAgreesWithGoSDK(t *testing.T) {
	for _, tc := range scanCases {
		if d := agree([]byte(tc.msg)); d != "" {
			t.Errorf("%s: %s", tc.name, d)
		}
	}
}

// agree reports how the Scanner and go-sdk's decoder differ on data, or "".
// An id longer than the Scanner reads is no difference.
func agree(data []byte) string {
	var s Scanner
	s.Write(data)
	got := s.Responses()
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return ""
	}
	switch m := msg.(type) {
	case *jsonrpc.Response:
		if raw, _ := json.Marshal(m.ID.Raw()); len(raw) > maxIDBytes {
			return ""
		}
		if len(got) != 1 || got[0] != m.ID {
			return fmt.Sprintf("go-sdk decoded response %v, the Scanner found %v", m.ID, got)
		}
	case *jsonrpc.Request:
		if len(got) != 0 {
			return fmt.Sprintf("go-sdk decoded a request, the Scanner found responses %v", got)
		}
	}
	return ""
}

// FuzzScanner holds the Scanner to go-sdk's decoder on any JSON value.
func FuzzScanner(f *testing.F) {
	for _, tc := range scanCases {
		f.Add([]byte(tc.msg))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		if d := agree(data); d != "" {
			t.Fatalf("%q: %s", data, d)
		}
	})
}

// TestScannerStaysSmall: reading 64 MiB of a message allocates almost
// nothing.
func TestScannerStaysSmall(t *testing.T) {
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	// The process's allocations are counted: the least of three readings
	// leaves out what another goroutine allocated meanwhile.
	var least uint64
	for i := range 3 {
		var s Scanner
		s.Write([]byte(`{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"`))
		allocated := allocatedBy(func() {
			for range 1024 {
				s.Write(chunk)
			}
		})
		s.Write([]byte(`"}]},"id":42}`))
		if got := s.Responses(); len(got) != 1 || got[0] != id(float64(42)) {
			t.Fatalf("responses %v, want 42", got)
		}
		if i == 0 || allocated < least {
			least = allocated
		}
	}
	if least > 4<<10 {
		t.Errorf("reading 64 MiB allocated %d bytes", least)
	}
}

// leastAllocatedBy is the least of three readings of allocatedBy(f): the
// process's allocations are counted, and the least leaves out what another
// goroutine allocated meanwhile. f must do the same each time.
func leastAllocatedBy(f func()) uint64 {
	least := allocatedBy(f)
	for range 2 {
		least = min(least, allocatedBy(f))
	}
	return least
}

func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestRefused: a refusal is told as such directly, wrapped, and once its
// response has been through JSON; an error with the same code that this
// process did not make is not.
func TestRefused(t *testing.T) {
	decoded := func() error {
		m, err := jsonrpc.DecodeMessage(RefusalJSON(json.RawMessage(`"call-1"`), 1000))
		if err != nil {
			t.Fatal(err)
		}
		r := m.(*jsonrpc.Response)
		if r.ID != id("call-1") {
			t.Fatalf("the refusal answers %v", r.ID)
		}
		return r.Error
	}()
	rejected := &jsonrpc.Error{Code: -32005, Message: "rejected"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"as made", Refusal(1000), true},
		{"wrapped", fmt.Errorf("calling %q: %w", "tools/call", Refusal(1000)), true},
		{"behind go-sdk's own", fmt.Errorf("calling: %w", fmt.Errorf("sending: %w: %w", rejected, fmt.Errorf("post: %w", Refusal(1000)))), true},
		{"joined", errors.Join(io.EOF, Refusal(1000)), true},
		{"through JSON", fmt.Errorf("calling: %w", decoded), true},
		{"a server's error with the code", &jsonrpc.Error{Code: Code, Message: "too large", Data: json.RawMessage(`{"heddle_refusal":"guess","limit":1000}`)}, false},
		{"the code without data", &jsonrpc.Error{Code: Code, Message: "too large"}, false},
		{"another error", io.EOF, false},
		{"none", nil, false},
	} {
		limit, ok := Refused(tc.err)
		if ok != tc.want || (ok && limit != 1000) {
			t.Errorf("%s: Refused = %d, %v; want %v", tc.name, limit, ok, tc.want)
		}
	}
}

// TestBuffer: what is written in pieces is read back whole, by Read in
// small pieces, by WriteTo and by Bytes; Reset empties the buffer.
func TestBuffer(t *testing.T) {
	data := make([]byte, 3<<20+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	fill := func() *Buffer {
		var b Buffer
		for p := data; len(p) > 0; {
			k := min(len(p), 5000)
			b.Write(p[:k])
			p = p[k:]
		}
		if b.Len() != len(data) {
			t.Fatalf("Len = %d, want %d", b.Len(), len(data))
		}
		return &b
	}
	if got := fill().AppendTo([]byte("<")); !bytes.Equal(got[1:], data) || got[0] != '<' {
		t.Error("AppendTo differs from what was written")
	}
	b := fill()
	var got []byte
	p := make([]byte, 3000)
	for {
		n, err := b.Read(p)
		got = append(got, p[:n]...)
		if err == io.EOF {
			break
		}
		if n == 0 {
			t.Fatal("Read read nothing before io.EOF")
		}
	}
	if !bytes.Equal(got, data) || b.Len() != 0 {
		t.Error("Read differs from what was written")
	}
	b = new(Buffer)
	if n, err := b.ReadFrom(io.MultiReader(bytes.NewReader(data[:7]), iotestHalf(data[7:]))); n != int64(len(data)) || err != nil {
		t.Fatalf("ReadFrom = %d, %v", n, err)
	}
	if got := b.AppendTo(nil); !bytes.Equal(got, data) {
		t.Error("ReadFrom differs from what was read")
	}
	var w bytes.Buffer
	b = fill()
	b.Read(p[:10])
	if _, err := b.WriteTo(&w); err != nil || !bytes.Equal(w.Bytes(), data[10:]) {
		t.Errorf("WriteTo after reading 10 bytes: %v", err)
	}
	for range 3 {
		b.Reset()
		if b.Len() != 0 || len(b.AppendTo(nil)) != 0 {
			t.Error("Reset left bytes")
		}
		b.Write(data[:100_000])
		b.Read(p[:10])
		if got := b.AppendTo(nil); !bytes.Equal(got, data[10:100_000]) {
			t.Errorf("after Reset: %d bytes differ", len(got))
		}
	}
}

// iotestHalf reads data half a read at a time.
func iotestHalf(data []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(data)) }

// TestBufferAllocates: holding a 4 MiB message allocates its size and at
// most one chunk more, where a growing slice would allocate several times
// as much; after Reset, messages of up to 1 MiB allocate nothing.
func TestBufferAllocates(t *testing.T) {
	piece := make([]byte, 64<<10)
	var b Buffer
	write := func(n int) func() {
		return func() {
			b.Reset()
			for range n {
				b.Write(piece)
			}
		}
	}
	if allocated := allocatedBy(write(64)); allocated > 4<<20+maxChunk+64<<10 {
		t.Errorf("holding 4 MiB allocated %.1f MiB", float64(allocated)/(1<<20))
	}
	write(16)()
	if allocated := leastAllocatedBy(write(16)); allocated > 1<<10 {
		t.Errorf("holding 1 MiB again allocated %d bytes", allocated)
	}
	if allocated := leastAllocatedBy(write(8)); allocated > 1<<10 {
		t.Errorf("holding 512 KiB after 1 MiB allocated %d bytes", allocated)
	}
}
