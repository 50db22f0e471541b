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
// wraps both in the same -32005 code). An HTTP error status stays
// transient; a reset past the dial stays transient too, since the request
// may have been read.
func TestClassify(t *testing.T) {
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want failure
	}{
		{"refused", ctx, rejected(dialErr(syscall.ECONNREFUSED)), failUnreachable},
		{"refused, sse", ctx, fmt.Errorf("calling %q: %w", "tools/call", dialErr(syscall.ECONNREFUSED)), failUnreachable},
		{"dns", ctx, rejected(&url.Error{Op: "Post", URL: "x", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", IsNotFound: true}}}), failUnreachable},
		{"dial timeout", ctx, rejected(&net.OpError{Op: "dial", Err: timeout{}}), failUnreachable},
		{"no route", ctx, rejected(dialErr(syscall.EHOSTUNREACH)), failUnreachable},
		{"503", ctx, rejected(nil), failTransient},
		{"reset", ctx, rejected(&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), failTransient},
		{"session missing", ctx, fmt.Errorf("x: %w", mcp.ErrSessionMissing), failNotSent},
		{"closed", ctx, fmt.Errorf("%w: calling", mcp.ErrConnectionClosed), failNotSent},
		{"eof", ctx, io.EOF, failBroken},
		{"protocol", ctx, &jsonrpc.Error{Code: -32602, Message: "bad params"}, failProtocol},
		{"cancelled", done, rejected(dialErr(syscall.ECONNREFUSED)), failCtx},
	}
	for _, tc := range tests {
		if got := classify(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: classify = %d, want %d", tc.name, got, tc.want)
		}
	}
	if !isBroken(rejected(dialErr(syscall.ECONNREFUSED))) {
		t.Error("a refused connection does not mark the session broken")
	}
	if isBroken(rejected(nil)) || isBroken(fmt.Errorf("x: %w", context.DeadlineExceeded)) {
		t.Error("a transient error marks the session broken")
	}
}

type timeout struct{}

func (timeout) Error() string   { return "i/o timeout" }
func (timeout) Timeout() bool   { return true }
func (timeout) Temporary() bool { return true }
