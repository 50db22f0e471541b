package mcpstdio

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

	"github.com/heddlehq/heddle/grants/mcpkind/internal/jsonmsg"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// startConn starts name args over the transport.
func startConn(t *testing.T, terminate time.Duration, name string, args ...string) *conn {
	t.Helper()
	cmd := exec.Command(name, args...)
	c, err := NewTransport(cmd, &Options{Terminate: terminate}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sc := c.(*conn)
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
	run := func(t *testing.T, out string) *conn {
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
	t.Run("too-deep", func(t *testing.T) {
		// Deeper than the decoder goes: the response is refused by its
		// id, a notification as deep is dropped, and the next line is
		// read.
		deep := strings.Repeat(`{"a":`, 2*jsonmsg.MaxDepth) + "1" + strings.Repeat("}", 2*jsonmsg.MaxDepth)
		c := run(t, `{"jsonrpc":"2.0","id":7,"result":`+deep+"}\n"+
			`{"jsonrpc":"2.0","method":"x","params":`+deep+"}\n"+
			`{"jsonrpc":"2.0","id":8,"result":{}}`+"\n")
		m, err := c.Read(ctx)
		if r, ok := m.(*jsonrpc.Response); err != nil || !ok || r.ID.Raw() != int64(7) || r.Error == nil {
			t.Fatalf("Read = %v, %v; want an error response to 7", m, err)
		}
		if m, err := c.Read(ctx); err != nil || m.(*jsonrpc.Response).ID.Raw() != int64(8) {
			t.Errorf("Read after = %v, %v; want response 8", m, err)
		}
	})
	t.Run("too-long", func(t *testing.T) {
		// Over go-sdk's 16 MiB, the default: its response is refused, and
		// the next line is read.
		c := run(t, `{"jsonrpc":"2.0","id":1,"result":"`+strings.Repeat("x", defaultMaxFrame)+"\"}\n"+`{"jsonrpc":"2.0","id":2,"result":{}}`)
		if m, err := c.Read(ctx); err != nil || !refusal(m, 1) {
			t.Errorf("Read = %v, %v; want a refusal of response 1", m, err)
		}
		if m, err := c.Read(ctx); err != nil || m.(*jsonrpc.Response).Error != nil {
			t.Errorf("Read after = %v, %v; want response 2", m, err)
		}
	})
}

// TestStdioConnClose: Close unblocks a waiting Read with io.EOF, and shuts a
// server that has spoken down by closing its stdin, then SIGTERM, then
// SIGKILL, leaving no process behind. A server that never sent a message
// (one that hangs in its handshake) is killed at once.
func TestStdioConnClose(t *testing.T) {
	t.Parallel()
	const hello = `echo '{"jsonrpc":"2.0","method":"notifications/hello"}'; `
	for _, tc := range []struct {
		name     string
		args     []string
		spoke    bool
		min, max time.Duration // how long Close takes, with terminate = 100 ms
	}{
		{"exits-on-eof", []string{"sh", "-c", hello + "exec cat"}, true, 0, time.Second},
		{"needs-sigterm", []string{"sh", "-c", hello + "exec sleep 60"}, true, 100 * time.Millisecond, 2 * time.Second},
		{"needs-sigkill", []string{"sh", "-c", `trap "" TERM; ` + hello + `exec sleep 60`}, true, 200 * time.Millisecond, 2 * time.Second},
		{"never-spoke", []string{"sh", "-c", `trap "" TERM; exec sleep 60`}, false, 0, 90 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := startConn(t, 100*time.Millisecond, tc.args[0], tc.args[1:]...)
			pid := c.cmd.Process.Pid
			if tc.spoke {
				if m, err := c.Read(context.Background()); err != nil {
					t.Fatalf("the server's first message: %v, %v", m, err)
				}
			}
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

// TestNewTransportOptions: without options each step of the shutdown waits
// 5 seconds, as go-sdk's CommandTransport does.
func TestNewTransportOptions(t *testing.T) {
	for _, tc := range []struct {
		opts *Options
		want time.Duration
	}{
		{nil, 5 * time.Second},
		{&Options{}, 5 * time.Second},
		{&Options{Terminate: 100 * time.Millisecond}, 100 * time.Millisecond},
	} {
		if got := NewTransport(exec.Command("cat"), tc.opts).(*transport).terminate; got != tc.want {
			t.Errorf("NewTransport(%+v): terminate %v, want %v", tc.opts, got, tc.want)
		}
	}
}
