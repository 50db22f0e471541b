package testmcp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/syncbuf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// binPath is the heddle-testmcp binary, built once by TestMain.
var binPath string

func TestMain(m *testing.M) {
	// spawn_child re-executes this test binary when the server is in process.
	if len(os.Args) == 2 && os.Args[1] == SleepForeverArg {
		SleepForever()
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "heddle-testmcp-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if binPath, err = Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

// Transport kinds a test can run over.
const (
	kindInMemory   = "inmemory"
	kindStdio      = "stdio"
	kindStreamable = "streamable"
	kindStateless  = "stateless"
	kindSSE        = "sse"
)

var allKinds = []string{kindInMemory, kindStdio, kindStreamable, kindStateless, kindSSE}

// testCtx returns a context bounded by d and cancelled when the test ends.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func newClient(copts *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "testmcp-test", Version: "0"}, copts)
}

// connect starts a server configured by opts, reached over kind, and returns
// a connected client session closed when the test ends.
func connect(t *testing.T, kind string, opts *Options, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	switch kind {
	case kindInMemory:
		return connectInMemory(t, NewServer(opts), copts)
	case kindStdio:
		return connectCommand(t, exec.Command(binPath, opts.Args()...), copts)
	case kindStreamable, kindStateless, kindSSE:
		o := *opts
		o.Stateless = kind == kindStateless
		ts := httptest.NewServer(Handler(&o))
		t.Cleanup(ts.Close)
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		hc := &http.Client{Transport: tr}
		var transport mcp.Transport = &mcp.StreamableClientTransport{Endpoint: ts.URL + StreamablePath, HTTPClient: hc}
		if kind == kindSSE {
			transport = &mcp.SSEClientTransport{Endpoint: ts.URL + SSEPath, HTTPClient: hc}
		}
		return connectTransport(t, transport, copts)
	}
	t.Fatalf("unknown transport kind %q", kind)
	return nil
}

// connectInMemory connects a client to srv over in-memory transports.
func connectInMemory(t *testing.T, srv *mcp.Server, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(testCtx(t, 10*time.Second), st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	t.Cleanup(func() { ss.Wait() })
	return connectTransport(t, ct, copts)
}

// connectCommand starts cmd as a stdio server. Its stderr is shown if the
// test fails.
func connectCommand(t *testing.T, cmd *exec.Cmd, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cmd.Stderr = stderrLog(t)
	return connectTransport(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, copts)
}

func connectTransport(t *testing.T, transport mcp.Transport, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := newClient(copts).Connect(testCtx(t, 10*time.Second), transport, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// stderrLog returns a writer whose content is logged if the test fails.
func stderrLog(t *testing.T) *syncbuf.Buffer {
	t.Helper()
	b := &syncbuf.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s", b.String())
		}
	})
	return b
}

// call calls a tool and fails the test on a Go error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(testCtx(t, 10*time.Second), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

// text returns the concatenated text parts of a result.
func text(res *mcp.CallToolResult) string {
	var s string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s += tc.Text
		}
	}
	return s
}
