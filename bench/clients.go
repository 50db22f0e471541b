package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client is one MCP client library connected to one server. Its turn
// makes a load and measures it; close ends the session (and stops a stdio
// server it started).
type client interface {
	turn(ctx context.Context, l load) (sample, error)
	close() error
}

// target is the server a client drives: a stdio server started by the
// client from bin, or a Streamable HTTP server already listening at url.
type target struct {
	transport string // "stdio", "http" or "http-json"
	bin       string // the heddle-testmcp binary
	url       string // HTTP: the endpoint
}

func (t target) stdio() bool { return t.transport == "stdio" }

// clientKind is one of the compared clients.
type clientKind struct {
	name  string // as the table names it
	open  func(ctx context.Context, t target) (client, error)
	fresh bool // a connection per call: measured with fewer calls
}

// goClient is a client in this process, measured by measureGo.
type goClient struct {
	call  callFunc
	close func() error
	proto string // the protocol version negotiated, when the library tells
}

// inProcess is a client measured in this process.
type inProcess struct{ goClient }

func (c inProcess) turn(ctx context.Context, l load) (sample, error) {
	return measureGo(ctx, c.call, l)
}
func (c inProcess) close() error { return c.goClient.close() }

// protocol is the protocol version the session negotiated, "" when the
// library does not say.
func (c inProcess) protocol() string { return c.proto }

// protocolTeller is a client that says which protocol version it
// negotiated.
type protocolTeller interface{ protocol() string }

// pooledHTTPClient is the HTTP client of the raw go-sdk and mcp-go
// sessions: a clone of http.DefaultTransport that keeps as many idle
// connections to the server as there are callers at most, as a careful
// hand-written client would (the default keeps two, and 64 callers would
// then dial anew for most calls).
func pooledHTTPClient() (*http.Client, func()) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = maxCallers
	return &http.Client{Transport: tr}, tr.CloseIdleConnections
}

// serverCommand is the command of a stdio server started by a Go client:
// the same binary and arguments for every client, in a process group of its
// own that dies with this program.
func serverCommand(bin string) *exec.Cmd {
	cmd := exec.Command(bin)
	cmd.SysProcAttr = stdioAttr()
	return cmd
}

// newGoSDKClient is the raw go-sdk client: no handlers, no roots, as a
// careful hand-written client would be (runtime/bench_test.go's too).
func newGoSDKClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "bench-go-sdk", Version: "0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
}

// goSDKTransport is the go-sdk transport to t: CommandTransport over
// stdio, StreamableClientTransport over HTTP with hc.
func goSDKTransport(t target, hc *http.Client) mcp.Transport {
	if t.stdio() {
		return &mcp.CommandTransport{Command: serverCommand(t.bin), TerminateDuration: 2 * time.Second}
	}
	return &mcp.StreamableClientTransport{Endpoint: t.url, HTTPClient: hc}
}

// openGoSDK connects one go-sdk session to t, shared by every caller.
func openGoSDK(ctx context.Context, t target) (client, error) {
	hc, closeIdle := pooledHTTPClient()
	sess, err := newGoSDKClient().Connect(ctx, goSDKTransport(t, hc), nil)
	if err != nil {
		closeIdle()
		return nil, err
	}
	call := func(ctx context.Context, tool string, args map[string]any) error {
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		return checkResult(res, err)
	}
	return inProcess{goClient{call: call, proto: sess.InitializeResult().ProtocolVersion, close: func() error {
		err := sess.Close()
		closeIdle()
		return err
	}}}, nil
}

// openFresh is the client that connects for every call, as some
// frameworks do: go-sdk connect and initialize, one call, close. Over
// stdio each call starts a server process; over HTTP each call has an HTTP
// client and connections of its own.
func openFresh(_ context.Context, t target) (client, error) {
	call := func(ctx context.Context, tool string, args map[string]any) error {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		defer tr.CloseIdleConnections()
		sess, err := newGoSDKClient().Connect(ctx, goSDKTransport(t, &http.Client{Transport: tr}), nil)
		if err != nil {
			return err
		}
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if cerr := sess.Close(); err == nil && cerr != nil && !t.stdio() {
			err = cerr
		}
		return checkResult(res, err)
	}
	return inProcess{goClient{call: call, close: func() error { return nil }}}, nil
}

// checkResult turns a tool error into an error.
func checkResult(res *mcp.CallToolResult, err error) error {
	switch {
	case err != nil:
		return err
	case res.IsError:
		b, _ := json.Marshal(res)
		return fmt.Errorf("tool error: %s", b)
	}
	return nil
}
