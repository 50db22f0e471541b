package mcplive

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rejected is go-sdk's wrapping of an HTTP client failure or an error
// status: jsonrpc2.ErrRejected (code -32005) joined with the cause, under
// "calling" and "sending" (as its streamable client builds it).
func rejected(cause error) error {
	errRejected := &jsonrpc.Error{Code: codeRejected, Message: "rejected by transport"}
	if cause == nil {
		return fmt.Errorf("calling %q: %w", "tools/call", fmt.Errorf("%w: sending %q: Service Unavailable", errRejected, "tools/call"))
	}
	return fmt.Errorf("calling %q: %w", "tools/call", fmt.Errorf("sending %q: %w: %w", "tools/call", errRejected, cause))
}

func dialErr(errno error) error {
	return &url.Error{Op: "Post", URL: "http://127.0.0.1:9/mcp", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)}}
}

// TestClassify: a request whose connection was refused, whose host does not
// resolve, or whose dial timed out never reached the server: it is
// failUnreachable, not the transient failure of a live session (go-sdk
// wraps both in the same -32005 code). A reset past the dial broke the
// connection to the server, and an answer of 502 or 503 says it cannot be
// reached behind its address: either way the request may have run. Any
// other HTTP error status is the server's own answer, transient.
func TestClassify(t *testing.T) {
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		err    error
		status int
		want   failClass
	}{
		{"refused", ctx, rejected(dialErr(syscall.ECONNREFUSED)), 0, failUnreachable},
		{"refused, sse", ctx, fmt.Errorf("calling %q: %w", "tools/call", dialErr(syscall.ECONNREFUSED)), 0, failUnreachable},
		{"dns", ctx, rejected(&url.Error{Op: "Post", URL: "x", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", IsNotFound: true}}}), 0, failUnreachable},
		{"dial timeout", ctx, rejected(&net.OpError{Op: "dial", Err: timeout{}}), 0, failUnreachable},
		{"no route", ctx, rejected(dialErr(syscall.EHOSTUNREACH)), 0, failUnreachable},
		{"503, status unknown", ctx, rejected(nil), 0, failTransient},
		{"503 answered", ctx, rejected(nil), 503, failGone},
		{"502 answered", ctx, rejected(nil), 502, failGone},
		{"500 answered", ctx, rejected(nil), 500, failTransient},
		{"504 answered", ctx, rejected(nil), 504, failTransient},
		{"reset", ctx, rejected(&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), 0, failBroken},
		{"session missing", ctx, fmt.Errorf("x: %w", mcp.ErrSessionMissing), 0, failNotSent},
		{"closed", ctx, fmt.Errorf("%w: calling", mcp.ErrConnectionClosed), 0, failNotSent},
		{"eof", ctx, io.EOF, 0, failBroken},
		{"protocol", ctx, &jsonrpc.Error{Code: -32602, Message: "bad params"}, 0, failProtocol},
		{"cancelled", done, rejected(dialErr(syscall.ECONNREFUSED)), 0, failCtx},
	}
	for _, tc := range tests {
		if got := classify(tc.ctx, tc.err, tc.status); got != tc.want {
			t.Errorf("%s: classify = %d, want %d", tc.name, got, tc.want)
		}
	}
	if !isBroken(rejected(dialErr(syscall.ECONNREFUSED))) {
		t.Error("a refused connection does not mark the session broken")
	}
	if !isBroken(rejected(&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)})) {
		t.Error("a reset connection does not mark the session broken")
	}
	if isBroken(rejected(nil)) || isBroken(fmt.Errorf("x: %w", context.DeadlineExceeded)) {
		t.Error("a transient error marks the session broken")
	}
}

type timeout struct{}

func (timeout) Error() string   { return "i/o timeout" }
func (timeout) Timeout() bool   { return true }
func (timeout) Temporary() bool { return true }
