package testmcp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCrashAfterStdio(t *testing.T) {
	cs := connect(t, kindStdio, &Options{CrashAfter: 2}, nil)
	for i := range 2 {
		if got := text(call(t, cs, "echo", map[string]any{"text": "ok"})); got != "ok" {
			t.Fatalf("call %d: got %q", i+1, got)
		}
	}
	_, err := cs.CallTool(testCtx(t, 10*time.Second), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "boom"}})
	if !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Fatalf("third call: got %v, want EOF or connection closed", err)
	}
	werr := cs.Wait()
	var exit *exec.ExitError
	if !errors.As(werr, &exit) || exit.ExitCode() != CrashExitStatus {
		t.Fatalf("session ended with %v, want exit status %d", werr, CrashExitStatus)
	}
	if _, err := cs.CallTool(testCtx(t, 10*time.Second), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("call after the crash: got %v, want ErrConnectionClosed", err)
	}
}

func TestCrashAfterInProcess(t *testing.T) {
	for _, kind := range []string{kindInMemory, kindStreamable} {
		t.Run(kind, func(t *testing.T) {
			cs := connect(t, kind, &Options{CrashAfter: 2}, nil)
			for i := range 2 {
				call(t, cs, "add", map[string]any{"a": i, "b": 1})
			}
			if _, err := cs.CallTool(testCtx(t, 10*time.Second), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 1}}); err == nil {
				t.Fatal("third call succeeded, want an error")
			}
			if kind == kindInMemory {
				// The server closed the session: the client sees the end.
				done := make(chan struct{})
				go func() { cs.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					t.Fatal("the session did not end after the crash")
				}
			}
			_, err := cs.CallTool(testCtx(t, 10*time.Second), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 1}})
			if err == nil {
				t.Fatal("call after the crash succeeded")
			}
		})
	}
}

func TestHangHandshake(t *testing.T) {
	opts := &Options{HangHandshake: true}
	connectHung := func(t *testing.T, transport mcp.Transport) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		cs, err := newClient(nil).Connect(ctx, transport, nil)
		if err == nil {
			cs.Close()
			t.Fatal("Connect succeeded against a hung handshake")
		}
		if elapsed := time.Since(start); elapsed > 3*time.Second {
			t.Errorf("Connect took %v to fail", elapsed)
		}
	}

	t.Run(kindInMemory, func(t *testing.T) {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := NewServer(opts).Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		connectHung(t, ct)
		ss.Close()
	})

	t.Run(kindStdio, func(t *testing.T) {
		cmd := exec.Command(binPath, opts.Args()...)
		cmd.Stderr = stderrLog(t)
		connectHung(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: 200 * time.Millisecond})
		// A failed Connect closes the transport, which reaps the child.
		if cmd.ProcessState == nil {
			t.Error("the server process was not reaped after Connect failed")
		}
	})
}

func TestHandshakeDelay(t *testing.T) {
	const delay = 150 * time.Millisecond
	for _, kind := range []string{kindInMemory, kindStreamable, kindStateless} {
		t.Run(kind, func(t *testing.T) {
			start := time.Now()
			cs := connect(t, kind, &Options{HandshakeDelay: delay}, nil)
			if elapsed := time.Since(start); elapsed < delay {
				t.Errorf("Connect took %v, want at least %v", elapsed, delay)
			}
			call(t, cs, "echo", map[string]any{"text": "x"})
		})
	}
}

func TestEnvStdio(t *testing.T) {
	t.Setenv("HEDDLE_TESTMCP_PARENT_ONLY", "leaked")
	cmd := exec.Command(binPath)
	cmd.Env = []string{"HEDDLE_TESTMCP_PROBE=hello"}
	cs := connectCommand(t, cmd, nil)

	res := call(t, cs, "env", map[string]any{"name": "HEDDLE_TESTMCP_PROBE"})
	if got := text(res); got != "hello" {
		t.Errorf("env HEDDLE_TESTMCP_PROBE: got %q, want hello", got)
	}
	res = call(t, cs, "env", map[string]any{"name": "HEDDLE_TESTMCP_PARENT_ONLY"})
	if got := text(res); got != "" {
		t.Errorf("env HEDDLE_TESTMCP_PARENT_ONLY: got %q, want empty", got)
	}
	if m, _ := res.StructuredContent.(map[string]any); m["set"] != false {
		t.Errorf("env HEDDLE_TESTMCP_PARENT_ONLY: structured %v, want set: false", res.StructuredContent)
	}
}

func TestGarbageOnStdout(t *testing.T) {
	cmd := exec.Command(binPath, (&Options{GarbageOnStdout: true}).Args()...)
	cmd.Stderr = stderrLog(t)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading stdout: %v", err)
	}
	if line != GarbageLine+"\n" {
		t.Errorf("first stdout line: got %q, want %q", line, GarbageLine)
	}
	stdin.Close() // stdin EOF ends a stdio server
	if err := cmd.Wait(); err != nil {
		t.Errorf("server exit: %v", err)
	}
}

// TestFailList: a server with FailList completes its handshake and answers
// calls, but every tools/list is a JSON-RPC error; with FailListAfter 1 the
// first listing is answered and the second, after a list_changed, is not.
func TestFailList(t *testing.T) {
	for _, kind := range []string{kindInMemory, kindStdio, kindStreamable} {
		t.Run(kind, func(t *testing.T) {
			cs := connect(t, kind, &Options{FailList: true}, nil)
			_, err := cs.ListTools(testCtx(t, 10*time.Second), nil)
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInternalError {
				t.Fatalf("ListTools: %v, want a JSON-RPC internal error", err)
			}
			if got := text(call(t, cs, "echo", map[string]any{"text": "ok"})); got != "ok" {
				t.Errorf("echo = %q while listing fails", got)
			}
		})
	}
	t.Run("after", func(t *testing.T) {
		cs := connect(t, kindInMemory, &Options{FailListAfter: 1}, nil)
		if _, err := cs.ListTools(testCtx(t, 10*time.Second), nil); err != nil {
			t.Fatalf("first ListTools: %v", err)
		}
		call(t, cs, "add_tool", map[string]any{"name": "later"})
		if _, err := cs.ListTools(testCtx(t, 10*time.Second), nil); err == nil {
			t.Fatal("second ListTools succeeded, want an error")
		}
	})
}

// TestHoldStream: with HoldStream, a GET of the Streamable HTTP endpoint
// gets no answer until its client gives up, and a session still starts
// over POST.
func TestHoldStream(t *testing.T) {
	hs := httptest.NewServer(Handler(&Options{HoldStream: true}))
	defer hs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+StreamablePath, nil)
	req.Header.Set("Accept", "text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a held GET was answered %s", resp.Status)
	}
	cs, err := newClient(nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL + StreamablePath, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("a session over POST: %v", err)
	}
	cs.Close()
}
