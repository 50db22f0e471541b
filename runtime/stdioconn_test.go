package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

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

// sameDecoding reports how decodeMessage and go-sdk's DecodeMessage differ
// on data, or "" when they agree: both fail, or both return equal messages.
// data holds one JSON value (go-sdk's decoder would ignore what follows).
func sameDecoding(data []byte) string {
	got, gerr := decodeMessage(data)
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

// TestDecodeMessage: the stdio transport decodes every message as go-sdk
// does, and refuses what go-sdk refuses: keys match only in their own case
// ("Method" is no method), and nesting deeper than 1,000 levels is refused.
func TestDecodeMessage(t *testing.T) {
	for _, c := range decodeCases {
		if d := sameDecoding([]byte(c)); d != "" {
			t.Errorf("%.80s: %s", c, d)
		}
	}
	if m, err := decodeMessage([]byte(`{"jsonrpc":"2.0","Method":"x","id":1}`)); err != nil {
		t.Error(err)
	} else if _, ok := m.(*jsonrpc.Response); !ok {
		t.Errorf("a \"Method\" made a request: %#v", m)
	}
	if _, err := decodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`)); err == nil {
		t.Error("1,001 levels of nesting decoded")
	}
}

// FuzzDecodeMessage compares decodeMessage with go-sdk's decoder on any
// single JSON value.
func FuzzDecodeMessage(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			if _, err := decodeMessage(data); err == nil {
				t.Fatalf("decoded invalid JSON %q", data)
			}
			return
		}
		if d := sameDecoding(data); d != "" {
			t.Fatalf("%q: %s", data, d)
		}
	})
}

// startConn starts name args over stdioTransport.
func startConn(t *testing.T, terminate time.Duration, name string, args ...string) *stdioConn {
	t.Helper()
	cmd := exec.Command(name, args...)
	c, err := (&stdioTransport{cmd: cmd, terminate: terminate}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sc := c.(*stdioConn)
	t.Cleanup(func() { _ = sc.Close() })
	return sc
}

// TestStdioConnLoopback: through cat, what Write sends Read returns, small
// and larger than the read buffer, in order.
func TestStdioConnLoopback(t *testing.T) {
	t.Parallel()
	c := startConn(t, time.Second, "cat")
	ctx := context.Background()
	big := strings.Repeat("x", 300<<10)
	params := []string{`{}`, `{"text":"` + big + `"}`, `{"n":3}`}
	// cat writes back while it reads: read concurrently, or a message
	// larger than the pipes would block both sides.
	got := make(chan jsonrpc.Message, len(params))
	go func() {
		for range params {
			m, err := c.Read(ctx)
			if err != nil {
				close(got)
				return
			}
			got <- m
		}
	}()
	for i, p := range params {
		id, _ := jsonrpc.MakeID(float64(i + 1))
		if err := c.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(p)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range params {
		m := <-got
		id, _ := jsonrpc.MakeID(float64(i + 1))
		r, ok := m.(*jsonrpc.Request)
		if !ok || r.ID != id || r.Method != "tools/call" || string(r.Params) != p {
			t.Fatalf("message %d came back as %.200v", i, m)
		}
	}
}

// TestStdioConnLines: batches come out one message at a time, blank lines
// and a last line without a newline are read, a line that is not JSON-RPC
// is an error, and the end of the stream is io.EOF.
func TestStdioConnLines(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, out string) *stdioConn {
		f := filepath.Join(t.TempDir(), "out")
		if err := os.WriteFile(f, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		return startConn(t, time.Second, "cat", f)
	}
	ctx := context.Background()
	t.Run("batch", func(t *testing.T) {
		c := run(t, "\n[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}},{\"jsonrpc\":\"2.0\",\"method\":\"a\"}]\r\n\n{\"jsonrpc\":\"2.0\",\"method\":\"b\"}")
		var got []string
		for {
			m, err := c.Read(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			switch m := m.(type) {
			case *jsonrpc.Response:
				got = append(got, fmt.Sprint("response ", m.ID.Raw()))
			case *jsonrpc.Request:
				got = append(got, "request "+m.Method)
			}
		}
		if want := []string{"response 1", "request a", "request b"}; !reflect.DeepEqual(got, want) {
			t.Errorf("read %q, want %q", got, want)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		c := run(t, "Starting server on stdio...\n")
		if _, err := c.Read(ctx); err == nil || errors.Is(err, io.EOF) {
			t.Errorf("Read = %v, want a decoding error", err)
		}
	})
	t.Run("too-long", func(t *testing.T) {
		c := run(t, `{"jsonrpc":"2.0","id":1,"result":"`+strings.Repeat("x", maxFrame)+"\"}\n")
		if _, err := c.Read(ctx); err == nil || !strings.Contains(err.Error(), "longer than") {
			t.Errorf("Read = %v, want a too-long error", err)
		}
	})
}

// TestStdioConnClose: Close unblocks a waiting Read with io.EOF, and shuts a
// server down by closing its stdin, then SIGTERM, then SIGKILL, leaving no
// process behind.
func TestStdioConnClose(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     []string
		min, max time.Duration // how long Close takes, with terminate = 100 ms
	}{
		{"exits-on-eof", []string{"cat"}, 0, time.Second},
		{"needs-sigterm", []string{"sleep", "60"}, 100 * time.Millisecond, 2 * time.Second},
		{"needs-sigkill", []string{"sh", "-c", `trap "" TERM; exec sleep 60`}, 200 * time.Millisecond, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := startConn(t, 100*time.Millisecond, tc.args[0], tc.args[1:]...)
			pid := c.cmd.Process.Pid
			read := make(chan error, 1)
			go func() {
				_, err := c.Read(context.Background())
				read <- err
			}()
			time.Sleep(50 * time.Millisecond) // let sh set its trap
			start := time.Now()
			_ = c.Close()
			if d := time.Since(start); d < tc.min || d > tc.max {
				t.Errorf("Close took %v, want %v to %v", d, tc.min, tc.max)
			}
			select {
			case err := <-read:
				if !errors.Is(err, io.EOF) {
					t.Errorf("Read = %v, want io.EOF", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Close did not unblock Read")
			}
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process %d is still there after Close (%v)", pid, err)
			}
			if _, err := c.Read(context.Background()); !errors.Is(err, io.EOF) {
				t.Errorf("Read after Close = %v, want io.EOF", err)
			}
			if err := c.Write(context.Background(), &jsonrpc.Request{Method: "x"}); err == nil {
				t.Error("Write after Close succeeded")
			}
		})
	}
}

// TestStdioConnCloseDuringWrite: a server that stops reading its stdin
// cannot hold Close up: a Write blocked on the full pipe fails, and Close
// returns.
func TestStdioConnCloseDuringWrite(t *testing.T) {
	t.Parallel()
	c := startConn(t, 100*time.Millisecond, "sleep", "60")
	wrote := make(chan error, 1)
	go func() {
		big := json.RawMessage(`{"text":"` + strings.Repeat("x", 1<<20) + `"}`)
		wrote <- c.Write(context.Background(), &jsonrpc.Request{Method: "notifications/message", Params: big})
	}()
	time.Sleep(100 * time.Millisecond) // the pipe fills; Write blocks
	closed := make(chan struct{})
	go func() {
		_ = c.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Fatal("Close waited for a blocked Write")
	}
	select {
	case err := <-wrote:
		if err == nil {
			t.Error("a Write cut short by Close succeeded")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the blocked Write did not end with Close")
	}
}
