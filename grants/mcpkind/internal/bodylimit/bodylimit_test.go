package bodylimit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/grants/mcpkind/internal/msglimit"
	"github.com/heddlehq/heddle/internal/testmcp"
)

const limit = 1 << 20

// server is an HTTP server on 127.0.0.1 whose handler writes what body
// says, and records how much of it the client took.
type server struct {
	*httptest.Server
	written atomic.Int64 // bytes the handler wrote before its writes failed
	done    chan struct{}
}

// serve starts a server answering every request with contentType and the
// pieces body yields, flushed one by one.
func serve(t *testing.T, contentType string, status int, body func(yield func(string) bool)) *server {
	t.Helper()
	s := &server{done: make(chan struct{}, 16)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { s.done <- struct{}{} }()
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		body(func(piece string) bool {
			n, err := io.WriteString(w, piece)
			s.written.Add(int64(n))
			if err == nil {
				w.(http.Flusher).Flush()
			}
			return err == nil
		})
	}))
	t.Cleanup(s.Close)
	return s
}

// huge yields n bytes of x in 64 KiB pieces, stopping when a write fails.
func huge(yield func(string) bool, n int) bool {
	piece := strings.Repeat("x", 64<<10)
	for ; n > 0; n -= len(piece) {
		if !yield(piece[:min(n, len(piece))]) {
			return false
		}
	}
	return true
}

// client returns an HTTP client through Transport, closed when the test
// ends.
func client(t *testing.T) *http.Client {
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: Transport(base, limit)}
}

// post sends a JSON-RPC request with id 7.
func post(t *testing.T, c *http.Client, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(req)
}

// waitWritten waits for the handler to end and returns what it wrote.
func (s *server) waitWritten(t *testing.T) int64 {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not end")
	}
	return s.written.Load()
}

// TestJSONAnswers: a JSON answer within the limit is handed on whole,
// whether or not its length is known; a larger one fails the request with
// the refusal, whether its length says so or the bytes do, and is not read
// further: its server stops long before it has written it all.
func TestJSONAnswers(t *testing.T) {
	small := `{"jsonrpc":"2.0","id":7,"result":{"n":"` + strings.Repeat("y", limit/2) + `"}}`
	t.Run("fits", func(t *testing.T) {
		for _, chunked := range []bool{false, true} {
			s := serve(t, "application/json", 200, func(yield func(string) bool) {
				if chunked {
					yield(small[:100]) // flushed: the length is not known
					yield(small[100:])
					return
				}
				yield(small)
			})
			resp, err := post(t, client(t), s.URL)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(got) != small {
				t.Errorf("chunked %v: read %d bytes, %v; want the answer", chunked, len(got), err)
			}
		}
	})
	t.Run("announced", func(t *testing.T) {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", fmt.Sprint(64<<20))
			w.WriteHeader(200)
			io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":"`)
		}))
		t.Cleanup(s.Close)
		_, err := post(t, client(t), s.URL)
		if _, ok := msglimit.Refused(err); !ok {
			t.Errorf("a 64 MiB answer: %v, want the refusal", err)
		}
	})
	t.Run("too-large", func(t *testing.T) {
		s := serve(t, "application/json", 200, func(yield func(string) bool) {
			_ = yield(`{"jsonrpc":"2.0","id":7,"result":"`) && huge(yield, 64<<20) && yield(`"}`)
		})
		var err error
		allocated := allocatedBy(func() { _, err = post(t, client(t), s.URL) })
		if l, ok := msglimit.Refused(err); !ok || l != limit {
			t.Fatalf("a 64 MiB answer: %v, want the refusal", err)
		}
		if w := s.waitWritten(t); w > 16<<20 {
			t.Errorf("the server wrote %d MiB before the client stopped reading", w>>20)
		}
		t.Logf("refusing a 64 MiB JSON answer allocated %.2f MiB", float64(allocated)/(1<<20))
		if allocated > limit+2<<20 {
			t.Errorf("refusing a 64 MiB answer allocated %.1f MiB, want at most the 1 MiB limit and 2 MiB", float64(allocated)/(1<<20))
		}
	})
}

// TestCallStream: on the event stream that answers a POST, events within
// the limit are handed on; at one over the limit, reading stops, and the
// stream ends with a refusal of the call the POST sent.
func TestCallStream(t *testing.T) {
	note := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"
	s := serve(t, "text/event-stream", 200, func(yield func(string) bool) {
		_ = yield(note) && yield(`data: {"jsonrpc":"2.0","id":7,"result":"`) && huge(yield, 64<<20) && yield("\"}\n\n")
	})
	resp, err := post(t, client(t), s.URL)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	allocated := allocatedBy(func() { got, err = io.ReadAll(resp.Body) })
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := note + "data: " + string(msglimit.RefusalJSON([]byte("7"), limit)) + "\n\n"
	if string(got) != want {
		t.Errorf("read %.300q,\nwant %.300q", got, want)
	}
	if w := s.waitWritten(t); w > 16<<20 {
		t.Errorf("the server wrote %d MiB before the client stopped reading", w>>20)
	}
	if allocated > limit+2<<20 {
		t.Errorf("refusing a 64 MiB event allocated %.1f MiB", float64(allocated)/(1<<20))
	}
}

// TestSessionStream: on a stream that serves the whole session (a GET),
// an event over the limit is read through and dropped, each response in it
// answered by a refusal that keeps the event's id; an oversized request,
// notification or event of another name is dropped; the events around them
// are handed on as they came.
func TestSessionStream(t *testing.T) {
	first := "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	last := ": a comment\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\n" + "data: \"id\":5,\"result\":{}}\n\n"
	bigEvent := func(yield func(string) bool, head, tail string) bool {
		return yield(head) && huge(yield, 3*limit) && yield(tail)
	}
	s := serve(t, "text/event-stream", 200, func(yield func(string) bool) {
		_ = yield(first) &&
			// A response whose id comes after its result, in two data lines, with an event id.
			bigEvent(yield, "id: 42\ndata: {\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"", "\"}]},\ndata: \"jsonrpc\":\"2.0\",\"id\":2}\n\n") &&
			bigEvent(yield, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"", "\"}}\n\n") &&
			bigEvent(yield, "event: other\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":\"", "\"}\n\n") &&
			bigEvent(yield, "data:{\"jsonrpc\":\"2.0\",\"id\":\"four\",\"result\":\"", "\"}\r\n\r\n") &&
			yield(last)
	})
	resp, err := client(t).Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := first +
		"id: 42\ndata: " + string(msglimit.RefusalJSON([]byte("2"), limit)) + "\n\n" +
		"data: " + string(msglimit.RefusalJSON([]byte(`"four"`), limit)) + "\n\n" +
		last
	if string(got) != want {
		t.Errorf("read %q,\nwant %q", got, want)
	}
}

// TestOtherBodies: an error's body, or one of another media type, is cut
// at the limit.
func TestOtherBodies(t *testing.T) {
	for _, tc := range []struct {
		contentType string
		status      int
	}{{"application/json", 500}, {"text/plain", 200}, {"text/event-stream", 404}} {
		s := serve(t, tc.contentType, tc.status, func(yield func(string) bool) { huge(yield, 3*limit) })
		resp, err := post(t, client(t), s.URL)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != limit {
			t.Errorf("%s %d: read %d bytes, %v; want %d", tc.contentType, tc.status, n, err, limit)
		}
	}
}

// TestGoSDKClients: go-sdk's Streamable HTTP client, answered with event
// streams and with JSON, and its legacy SSE client, through Transport: a
// result over the limit fails its call with the refusal, a call made at the
// same time succeeds, and the session goes on.
func TestGoSDKClients(t *testing.T) {
	for _, kind := range []string{"streamable", "streamable-json", "sse"} {
		t.Run(kind, func(t *testing.T) {
			ts := httptest.NewServer(testmcp.Handler(&testmcp.Options{JSONResponse: kind == "streamable-json"}))
			t.Cleanup(ts.Close)
			hc := client(t)
			var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: ts.URL + testmcp.StreamablePath, HTTPClient: hc, MaxEventSize: EventSize(limit), MaxRetries: -1}
			if kind == "sse" {
				tr = &mcp.SSEClientTransport{Endpoint: ts.URL + testmcp.SSEPath, HTTPClient: hc, MaxEventSize: EventSize(limit)}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bodylimit-test"}, nil).Connect(ctx, tr, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()

			var wg sync.WaitGroup
			var slow error
			wg.Go(func() {
				_, slow = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 200}})
			})
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"bytes": 8 * limit}})
			wg.Wait()
			if _, ok := msglimit.Refused(err); !ok {
				t.Errorf("an 8 MiB result: %v, want the refusal", err)
			}
			if slow != nil {
				t.Errorf("a call made at the same time: %v", slow)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}})
			if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "after" {
				t.Errorf("the next call: %v, %v", res, err)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"bytes": limit / 2}})
			if err != nil || len(res.Content) != 1 || !bytes.Equal([]byte(res.Content[0].(*mcp.TextContent).Text), bytes.Repeat([]byte("x"), limit/2)) {
				t.Errorf("a result within the limit: %v", err)
			}
		})
	}
}

// TestEventSize: go-sdk's bound sits above every event Transport hands on.
func TestEventSize(t *testing.T) {
	if EventSize(limit) <= limit {
		t.Errorf("EventSize(%d) = %d", limit, EventSize(limit))
	}
}

func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// smallAnswer is an event stream answering one call, as go-sdk's servers
// write one.
const smallAnswer = "event: message\nid: 1_0\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n\n"

// readAnswer reads one small answer through events, as go-sdk does: to
// its end, or to its first event and then Close.
func readAnswer(toEnd bool) {
	e := newEvents(io.NopCloser(strings.NewReader(smallAnswer)), limit, nil)
	if toEnd {
		_, _ = io.Copy(io.Discard, e)
	} else {
		var p [512]byte
		_, _ = e.Read(p[:])
	}
	_ = e.Close()
}

// TestEventsEndWithLast: a body that reports its end with its last event
// has that end handed on with the event's last bytes, so its reader learns
// it without reading again; a body that reports it only on a later read,
// or has more after the event, has it handed on after the event.
func TestEventsEndWithLast(t *testing.T) {
	two := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" + smallAnswer
	for _, tc := range []struct {
		name   string
		body   io.Reader
		events []string // what each read returns
		last   error    // with the last event's bytes
	}{
		{"end with the event", iotest.DataErrReader(strings.NewReader(smallAnswer)), []string{smallAnswer}, io.EOF},
		{"end after it", strings.NewReader(smallAnswer), []string{smallAnswer}, nil},
		{"two events, end with the last", iotest.DataErrReader(strings.NewReader(two)), []string{two[:len(two)-len(smallAnswer)], smallAnswer}, io.EOF},
		{"a comment after it", iotest.DataErrReader(strings.NewReader(smallAnswer + ": bye\n")), []string{smallAnswer, ": bye\n"}, io.EOF},
	} {
		e := newEvents(io.NopCloser(tc.body), limit, nil)
		p := make([]byte, 4<<10)
		for i, want := range tc.events {
			n, err := e.Read(p)
			if string(p[:n]) != want {
				t.Errorf("%s: read %d is %q, want %q", tc.name, i, p[:n], want)
			}
			wantErr := error(nil)
			if i == len(tc.events)-1 {
				wantErr = tc.last
			}
			if err != wantErr {
				t.Errorf("%s: read %d ended with %v, want %v", tc.name, i, err, wantErr)
			}
		}
		n, err := e.Read(p)
		if n != 0 || err != io.EOF {
			t.Errorf("%s: after the events, read %d bytes and %v, want io.EOF", tc.name, n, err)
		}
		_ = e.Close()
	}
}

// TestEventsReaderSizes: a call's answer is read through 32 KiB; a stream
// that serves the session, held open while idle, holds 4 KiB.
func TestEventsReaderSizes(t *testing.T) {
	call := newEvents(io.NopCloser(strings.NewReader(smallAnswer)), limit, func() json.RawMessage { return json.RawMessage("1") })
	session := newEvents(io.NopCloser(strings.NewReader(smallAnswer)), limit, nil)
	if got := call.in.Size(); got != 32<<10 {
		t.Errorf("a call's answer is read through %d bytes, want 32 KiB", got)
	}
	if got := session.in.Size(); got != 4<<10 {
		t.Errorf("a session's stream is read through %d bytes, want 4 KiB", got)
	}
	for _, e := range []*events{call, session} {
		if _, err := io.Copy(io.Discard, e); err != nil {
			t.Error(err)
		}
		_ = e.Close()
	}
}

// TestEventsReuseBuffers: reading a small answer allocates a small part of
// the 32 KiB its reader buffers, whether it is read to its end or closed
// after its event: the buffers are reused from one answer to the next.
func TestEventsReuseBuffers(t *testing.T) {
	most := uint64(4 << 10)
	if raceEnabled {
		most = 16 << 10 // a quarter of the buffers are dropped: about 9 KiB
	}
	for _, toEnd := range []bool{true, false} {
		readAnswer(toEnd)
		const n = 200
		per := allocatedBy(func() {
			for range n {
				readAnswer(toEnd)
			}
		}) / n
		if per > most {
			t.Errorf("read to its end %v: %d bytes allocated per answer, want at most %d", toEnd, per, most)
		}
	}
}

// BenchmarkEventsSmallAnswer measures reading one small answer.
func BenchmarkEventsSmallAnswer(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		readAnswer(true)
	}
}
