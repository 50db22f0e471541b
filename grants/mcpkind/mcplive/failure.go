package mcplive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind/internal/childproc"
	"github.com/heddlehq/heddle/internal/netwhy"
)

// This file says why a connection failed, in the words an operator needs to
// fix it: the command of a stdio server and what became of it, the HTTP
// status or network failure of a remote one. Messages name servers, commands
// and hosts (host:port, never a URL: its path, query or userinfo may hold a
// credential), and never repeat a library's text, which may quote a URL.

// maxStderrLine bounds the stderr line a start-up failure quotes.
const maxStderrLine = 200

// attempt is what one connection attempt keeps to explain its failure.
type attempt struct {
	started time.Time      // when the attempt began
	cmd     *exec.Cmd      // stdio: the child
	stdio   *keepConn      // stdio: the transport, and the connection it made
	mark    childproc.Mark // stdio: where the child's stderr begins
	status  *statusWatch   // http, sse: the error statuses the server answered
	cut     *handshakeCut  // http, sse: ends the handshake's requests at its deadline
	wire    *wireConn      // the connection made, when heddle built the transport
}

// reaped closes the attempt's stdio connection, again when the SDK already
// did (Close is idempotent, and a second call returns the first's result),
// and reports whether the child has been waited for: only then may its exit
// status and all of its stderr be read.
func (a *attempt) reaped() bool {
	if a.stdio == nil || a.stdio.conn == nil {
		return false
	}
	return a.stdio.conn.Close() == nil
}

// ioErr is the first error reading from or writing to the attempt's stdio
// connection before it was closed.
func (a *attempt) ioErr() error {
	if a.stdio == nil || a.stdio.conn == nil {
		return nil
	}
	c := a.stdio.conn
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// keepConn is a transport that keeps the connection it made, so that a
// failed handshake can make sure its child was waited for and tell what it
// did. (go-sdk reports a failed handshake over a closed connection only as
// text: a child that exited and one that wrote garbage on stdout come back
// alike.)
type keepConn struct {
	mcp.Transport
	conn *ioWatch
}

func (k *keepConn) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := k.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	k.conn = &ioWatch{Connection: conn}
	return k.conn, nil
}

// ioWatch is a connection that keeps its first read or write error from
// before it was closed: what the child did, not what closing it did. The
// stdio connection it wraps has no optional methods for it to hide.
type ioWatch struct {
	mcp.Connection
	mu      sync.Mutex
	closing bool
	err     error
}

func (w *ioWatch) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := w.Connection.Read(ctx)
	if err != nil {
		w.note(err)
	}
	return msg, err
}

func (w *ioWatch) Write(ctx context.Context, msg jsonrpc.Message) error {
	recordRequestID(ctx, msg)
	err := w.Connection.Write(ctx, msg)
	if err != nil {
		w.note(err)
	}
	return err
}

func (w *ioWatch) Close() error {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	return w.Connection.Close()
}

func (w *ioWatch) note(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil && !w.closing {
		w.err = err
	}
}

// statusWatch records the error statuses a server answers: the last 401 or
// 403, the last other status of 400 or more, and when it last answered 502
// or 503. It wraps the outermost transport, so it sees what the server
// answered after a strategy's own renewal and retry. Once the attempt's
// session is up it also tells the server of an event stream the transport
// could not re-open because nothing listens any more (onLost).
type statusWatch struct {
	next       http.RoundTripper
	auth, last atomic.Int32
	gone       atomic.Int32 // the last 502 or 503
	goneAt     atomic.Int64 // when, in Unix nanoseconds
	lost       atomic.Pointer[func(error)]
}

// onLost sets what to do when a GET (the event stream the transport keeps
// open, or re-opens) cannot even be dialed.
func (w *statusWatch) onLost(f func(error)) { w.lost.Store(&f) }

func (w *statusWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(req)
	if err != nil {
		if f := w.lost.Load(); f != nil && req.Method == http.MethodGet && req.Context().Err() == nil && dialFailed(err) {
			(*f)(err)
		}
		return resp, err
	}
	switch c := resp.StatusCode; {
	case c == http.StatusUnauthorized || c == http.StatusForbidden:
		w.auth.Store(int32(c))
	case c == http.StatusMethodNotAllowed && req.Method == http.MethodGet:
		// A server without a standalone event stream says so; not a failure.
	case c == http.StatusBadGateway || c == http.StatusServiceUnavailable:
		w.gone.Store(int32(c))
		w.goneAt.Store(time.Now().UnixNano())
		w.last.Store(int32(c))
	case c >= 400:
		w.last.Store(int32(c))
	}
	return resp, nil
}

// goneWithin is the 502 or 503 the server answered within d, or 0. go-sdk
// reports those statuses to the call only as text; a call that fails with
// a transport error asks the watch whether one came just now.
func (w *statusWatch) goneWithin(d time.Duration) int {
	if w == nil || time.Since(time.Unix(0, w.goneAt.Load())) > d {
		return 0
	}
	return int(w.gone.Load())
}

// connectError is the coded error of a failed connection attempt.
func (s *server) connectError(ctx context.Context, err error, at *attempt) error {
	if at.status != nil {
		if code := int(at.status.auth.Load()); code != 0 {
			msg := fmt.Sprintf("server %s: answered HTTP %d %s during the handshake: %s", s.name, code, http.StatusText(code), s.credentials())
			if ctx.Err() != nil {
				msg += "; authorizing did not finish in time"
			}
			return diag.Wrap(diag.MCPAuthRejected, err, "%s", msg)
		}
	}
	return diag.Wrap(diag.MCPServerUnreachable, err, "server %s: %s", s.name, s.whyNot(ctx, err, at))
}

// credentials says what heddle sent the server.
func (s *server) credentials() string {
	switch a := s.spec.Auth; {
	case a == nil:
		return "heddle sent no credentials (the server sets neither headers_ref nor auth)"
	case a.Plugin:
		return fmt.Sprintf("the credentials of auth plugin %s were refused", a.Kind)
	case a.Kind == "static":
		return "the header its static strategy (headers_ref) sets was refused"
	default:
		return fmt.Sprintf("the credentials of its %s strategy were refused", a.Kind)
	}
}

// whyNot says why a connection attempt failed.
func (s *server) whyNot(ctx context.Context, err error, at *attempt) string {
	timedOut := ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)
	if at.cmd != nil {
		return s.whyNotStdio(ctx, timedOut, err, at)
	}
	if timedOut {
		return s.handshakeTimeout(at)
	}
	if reason, _ := netReason(err, s.host()); reason != "" {
		return reason
	}
	if at.status != nil {
		if code := int(at.status.last.Load()); code != 0 {
			msg := fmt.Sprintf("answered HTTP %d %s to the MCP handshake", code, http.StatusText(code))
			if code == http.StatusNotFound {
				msg += " (check the path of its url)"
			}
			return msg
		}
	}
	if reason := rpcReason(err); reason != "" {
		return "the MCP handshake failed: " + reason
	}
	var coded *diag.Error
	if errors.As(err, &coded) { // a strategy's failure: its message is safe
		return "cannot connect: " + coded.Error()
	}
	return "cannot connect"
}

// whyNotStdio says why a stdio server's child did not complete its
// handshake: it could not start, it ended, it was too slow, or it answered
// something else than MCP; with its last line on stderr.
func (s *server) whyNotStdio(ctx context.Context, timedOut bool, err error, at *attempt) string {
	command := s.spec.Command
	if reason, ok := childproc.StartError(command, s.spec.Dir, err); ok {
		return reason
	}
	reaped, ioErr := at.reaped(), at.ioErr()
	var why string
	switch {
	case timedOut:
		why = fmt.Sprintf("command %s %s", command, s.handshakeTimeout(at))
	case reaped && endedFirst(ioErr):
		why = fmt.Sprintf("command %s %s before the MCP handshake", command, childproc.ExitReason(at.cmd))
	case ioErr != nil && !endedFirst(ioErr):
		why = fmt.Sprintf("command %s wrote something other than MCP messages on stdout (an MCP server must keep stdout for the protocol, and log to stderr)", command)
	case rpcReason(err) != "":
		why = fmt.Sprintf("command %s started, but the MCP handshake failed: %s", command, rpcReason(err))
	default:
		why = fmt.Sprintf("command %s started, but did not complete the MCP handshake", command)
	}
	if !reaped {
		return why
	}
	if line := s.stderr.LastLine(at.mark, maxStderrLine); line != "" {
		return fmt.Sprintf("%s; its last line on stderr: %q", why, line)
	}
	return why + "; it wrote nothing on stderr"
}

// endedFirst reports a handshake that failed because the child's end of
// the pipes closed — it exited, or closed its stdout or stdin, before
// answering — given the first error reading from or writing to it.
func endedFirst(ioErr error) bool {
	return errors.Is(ioErr, io.EOF) || errors.Is(ioErr, io.ErrUnexpectedEOF) ||
		errors.Is(ioErr, syscall.EPIPE) || errors.Is(ioErr, os.ErrClosed)
}

// rpcReason describes a JSON-RPC error the server answered with, by its
// code (its message is the server's text), or is "" when err is none.
func rpcReason(err error) string {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && rpcErr.Code != codeClientClosing && rpcErr.Code != codeServerClosing && rpcErr.Code != codeRejected {
		return fmt.Sprintf("it answered with JSON-RPC error %d", rpcErr.Code)
	}
	return ""
}

// go-sdk's own JSON-RPC codes, which are no answer of the server: a
// connection closing at either end, and a request its transport did not
// send (jsonrpc2.ErrRejected: an HTTP or network failure).
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

// handshakeTimeout says how long the attempt waited for the handshake,
// and the setting that bounds it: start-up's attempts end a margin before
// ai.startup_timeout_ms, the supervisor's at it.
func (s *server) handshakeTimeout(at *attempt) string {
	waited := time.Since(at.started).Round(100 * time.Millisecond)
	return fmt.Sprintf("did not complete its handshake within %s (ai.startup_timeout_ms is %d ms)", waited, s.inst.env.Budget.Milliseconds())
}

// host is the host (and port) of the server's URL, the only part of it a
// message may show.
func (s *server) host() string {
	u, err := url.Parse(s.spec.URL)
	if err != nil || u.Host == "" {
		return "its host"
	}
	return u.Host
}

// netReason describes a network failure of an exchange with host, or is ""
// when err is none (netwhy.Reason), and a redirect heddle refused.
func netReason(err error, host string) (reason string, dialed bool) {
	if errors.As(err, new(*crossOrigin)) {
		return "the server redirected to another origin, which heddle does not follow", false
	}
	return netwhy.Reason(err, host)
}
