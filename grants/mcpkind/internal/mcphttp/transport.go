// Package mcphttp is heddle's Streamable HTTP client transport, a go-sdk
// mcp.Transport, as package mcpstdio is its stdio one.
//
// It speaks the wire of both protocol revisions go-sdk's client speaks:
// at 2025-11-25 a session (Mcp-Session-Id, taken from the answer to
// initialize, sent on every later request, ended by a DELETE) and the
// standalone event stream a GET opens for what the server sends
// unasked; at 2026-07-28 no session and no GET, the version and the
// standard headers (Mcp-Method, Mcp-Name, Mcp-Param-*) on every request,
// and subscriptions/listen's long answer read like any other. Each POST is
// answered with JSON or with an event stream; a stream that ends before it
// answers its call is resumed with Last-Event-ID when the server gave its
// events ids. 401 and 403 go to the OAuth handler once, and the request is
// sent again. The errors it returns follow go-sdk's: a request that was not
// sent, or that the server refused with a status, is rejected (JSON-RPC code
// -32005, which leaves the session up); a session the server no longer knows
// is mcp.ErrSessionMissing.
//
// It stands in for go-sdk's mcp.StreamableClientTransport because a call
// costs less through it. go-sdk reads every message with a streaming
// decoder of its own, made per message, and most of the bytes a call
// allocates over Streamable HTTP are that decoder's; this transport reads
// an answer's events with a pooled reader and decodes each message once
// with package jsonmsg, into which no buffer outlives its message.
//
// What it reads of an answer is bounded by the HTTP client it is given
// (package bodylimit wraps heddle's), and by Options.MaxEventBytes for an
// event, past which the stream is dropped as go-sdk drops it.
//
// Usage:
//
//	t := mcphttp.NewTransport(mcphttp.Options{Endpoint: url, Client: hc})
//	sess, err := client.Connect(ctx, t, nil)
package mcphttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/heddlehq/heddle/grants/mcpkind/internal/jsonmsg"
)

// Options configures a transport.
type Options struct {
	// Endpoint is the server's MCP endpoint.
	Endpoint string

	// Client sends the requests; nil means http.DefaultClient.
	Client *http.Client

	// MaxRetries is how many times an event stream that broke off is
	// opened again, without progress, before the connection fails. Zero
	// means 5, as go-sdk's; a negative number, none.
	MaxRetries int

	// OAuth, if set, gives each request its token and is asked to
	// authorize once when a request is answered 401 or 403.
	OAuth auth.OAuthHandler

	// MaxEventBytes bounds an event of a stream: a longer one ends the
	// connection, as go-sdk's MaxEventSize does. Zero means 16 MiB.
	MaxEventBytes int

	// NoStandaloneStream leaves the standalone event stream of
	// 2025-11-25 unopened.
	NoStandaloneStream bool
}

// NewTransport returns a transport that connects to o.Endpoint.
func NewTransport(o Options) mcp.Transport {
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = 5
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	if o.MaxEventBytes <= 0 {
		o.MaxEventBytes = mcp.DefaultMaxEventSize
	}
	return &transport{o: o}
}

type transport struct{ o Options }

// Connect returns a connection; nothing is sent until the first Write. The
// connection's own requests (the standalone stream, the DELETE) run under a
// context that keeps ctx's values but not its end.
func (t *transport) Connect(ctx context.Context) (mcp.Connection, error) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &conn{
		o:        t.o,
		ctx:      cctx,
		cancel:   cancel,
		incoming: make(chan jsonrpc.Message, 10),
		done:     make(chan struct{}),
		failed:   make(chan struct{}),
	}, nil
}

// Header names of the transport.
const (
	hdrVersion     = "Mcp-Protocol-Version"
	hdrSession     = "Mcp-Session-Id"
	hdrLastEventID = "Last-Event-ID"
	hdrMethod      = "Mcp-Method"
	hdrName        = "Mcp-Name"
	hdrParamPrefix = "Mcp-Param-"
)

// Protocol revisions the transport tells apart.
const (
	version20251125 = "2025-11-25"
	version20260728 = "2026-07-28"
)

// closeTimeout bounds the DELETE that ends a session, as go-sdk bounds it.
const closeTimeout = 5 * time.Second

// errRejected is go-sdk's jsonrpc2.ErrRejected (matched by its code): a
// request the transport did not send, or that the server refused with a
// status, which leaves the connection up.
var errRejected error = &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

// conn is one connection. Read is called from one goroutine, Write from
// any number, Close from any, more than once.
type conn struct {
	o      Options
	ctx    context.Context // the connection's own requests; ends on Close
	cancel context.CancelFunc

	incoming chan jsonrpc.Message
	done     chan struct{} // closed by Close

	failOnce sync.Once
	failErr  error
	failed   chan struct{} // closed when the connection fails

	closeOnce sync.Once
	closeErr  error

	mu        sync.Mutex
	version   string      // the negotiated revision, once known
	sessionID string      // 2025-11-25's session, once the server gave one
	opening   jsonrpc.ID  // the id of the initialize or server/discover in flight
	asked     string      // the revision a server/discover in flight asked for
	params    paramTables // the Mcp-Param-* headers of each tool, at 2026-07-28
	streaming bool        // the standalone stream was started
}

// SessionID is the session the server gave, or "".
func (c *conn) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

func (c *conn) fail(err error) {
	if err != nil {
		c.failOnce.Do(func() {
			c.failErr = err
			close(c.failed)
		})
	}
}

func (c *conn) failure() error {
	select {
	case <-c.failed:
		return c.failErr
	default:
		return nil
	}
}

// Read returns the next message from any of the answers being read.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := c.failure(); err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.failed:
		return nil, c.failure()
	case <-c.done:
		return nil, io.EOF
	case msg := <-c.incoming:
		return msg, nil
	}
}

// deliver hands msg to Read, after noting what the connection learns from
// it: the revision an initialize or server/discover result settled, and
// the Mcp-Param-* headers of the tools a tools/list result lists. It
// reports false when the connection closed first.
func (c *conn) deliver(msg jsonrpc.Message, listing bool) bool {
	if r, ok := msg.(*jsonrpc.Response); ok && r.Error == nil {
		c.learn(r, listing)
	}
	select {
	case c.incoming <- msg:
		return true
	case <-c.done:
		return false
	}
}

// learn notes what a response tells the connection.
func (c *conn) learn(r *jsonrpc.Response, listing bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.opening.IsValid() && r.ID == c.opening:
		if v := settled(r.Result, c.asked); v != "" {
			c.version = v
		}
		c.opening = jsonrpc.ID{}
	case listing && c.version >= version20260728:
		c.params.record(r.Result)
	}
}

// request is what Write needs to know of an outgoing message.
type request struct {
	call    *jsonrpc.Request // the request, when it expects a response
	method  string
	summary string
	params  []byte
	version string // the revision its _meta names
}

func describe(msg jsonrpc.Message) (request, error) {
	var r request
	switch m := msg.(type) {
	case *jsonrpc.Request:
		r.method = m.Method
		r.summary = "sending " + strconv.Quote(m.Method)
		if m.IsCall() {
			r.call = m
		}
		r.params, r.version = m.Params, readParams(m.Params)
	case *jsonrpc.Response:
		r.summary = fmt.Sprintf("sending the response to request %v", m.ID.Raw())
	default:
		return r, fmt.Errorf("cannot send a message of type %T", msg)
	}
	return r, nil
}

// Write sends msg in a POST, and starts reading what answers it.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	r, resp, err := c.send(ctx, msg)
	if err != nil || resp == nil {
		return err
	}
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "application/json":
		go c.readJSON(resp, r.summary, r.method == "tools/list", nil)
	default: // an event stream (send refuses any other answer)
		go c.follow(ctx, resp, r.summary, r.call, r.method == "tools/list", nil)
	}
	return nil
}

// Call sends req, a request with an id, and returns its response, reading
// the answer on the calling goroutine rather than handing it to Read; what
// else the answer holds (the server's requests and notifications) goes to
// Read. An error is what Write would have returned, or the answer's end
// without a response (the connection failed, or the caller gave up).
func (c *conn) Call(ctx context.Context, req *jsonrpc.Request) (*jsonrpc.Response, error) {
	if !req.IsCall() {
		return nil, fmt.Errorf("calling %q: the request has no id", req.Method)
	}
	r, resp, err := c.send(ctx, req)
	if err != nil {
		return nil, err
	}
	var got *jsonrpc.Response
	take := func(m *jsonrpc.Response) {
		if m.ID == req.ID {
			got = m
		} else {
			c.deliver(m, false) // a JSON answer for another request: go-sdk's
		}
	}
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "application/json":
		c.readJSON(resp, r.summary, false, take)
	default:
		c.follow(ctx, resp, r.summary, r.call, false, take)
	}
	switch {
	case got != nil:
		return got, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case c.failure() != nil:
		return nil, c.failure()
	}
	return nil, fmt.Errorf("%s: %w", r.summary, errNoResponse)
}

// send sends msg in a POST and returns the answer's response to read, nil
// when the message expects none (its answer is read and closed here).
func (c *conn) send(ctx context.Context, msg jsonrpc.Message) (request, *http.Response, error) {
	if err := c.failure(); err != nil {
		return request{}, nil, err
	}
	r, err := describe(msg)
	if err != nil {
		return r, nil, err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return r, nil, fmt.Errorf("%s: %v", r.summary, err)
	}
	if r.call != nil && (r.method == "initialize" || r.method == "server/discover") {
		c.mu.Lock()
		c.opening, c.asked = r.call.ID, r.version
		c.mu.Unlock()
	}

	req, resp, err := c.post(ctx, &r, data)
	if err != nil {
		return r, nil, err
	}
	if (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && c.o.OAuth != nil {
		if err := c.o.OAuth.Authorize(ctx, req, resp); err != nil {
			// A caller who gave up while authorizing is not asked again
			// by what follows (the cancellation go-sdk sends).
			if ctx.Err() != nil {
				c.fail(fmt.Errorf("%s: authorization cancelled: %w", r.summary, err))
			}
			return r, nil, fmt.Errorf("%s: %w: %w", r.summary, errRejected, err)
		}
		if _, resp, err = c.post(ctx, &r, data); err != nil {
			return r, nil, err
		}
	}
	if err := c.check(resp, r.summary); err != nil {
		if r.method == "server/discover" || r.method == "subscriptions/listen" {
			// A server of the older revision may refuse either with a
			// status: the client falls back, or goes on without.
			if !errors.Is(err, errRejected) {
				err = fmt.Errorf("%w: %w", err, errRejected)
			}
		} else if !errors.Is(err, errRejected) {
			c.fail(err)
		}
		return r, nil, err
	}
	if id := resp.Header.Get(hdrSession); id != "" {
		c.mu.Lock()
		had := c.sessionID
		if had == "" {
			c.sessionID = id
		}
		c.mu.Unlock()
		if had != "" && had != id {
			resp.Body.Close()
			return r, nil, fmt.Errorf("mismatching session IDs %q and %q", had, id)
		}
	}

	if r.call == nil {
		drain(resp.Body)
		if r.method == "notifications/initialized" {
			c.startStream()
		}
		return r, nil, nil
	}
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "application/json", "text/event-stream":
		return r, resp, nil
	}
	resp.Body.Close()
	return r, nil, fmt.Errorf("%s: unsupported content type %q", r.summary, resp.Header.Get("Content-Type"))
}

// post sends data. An error means it was not sent (or no answer came):
// it is rejected, and the connection stays up.
func (c *conn) post(ctx context.Context, r *request, data []byte) (*http.Request, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.o.Endpoint, bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	req.Header["Content-Type"] = contentJSON
	req.Header["Accept"] = acceptBoth
	if err := c.setHeaders(req, r); err != nil {
		return nil, nil, fmt.Errorf("%s: %w: %w", r.summary, errRejected, err)
	}
	resp, err := c.o.Client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w: %w", r.summary, errRejected, err)
	}
	return req, resp, nil
}

// Header values shared by every request (net/http does not change them).
var (
	contentJSON = []string{"application/json"}
	acceptBoth  = []string{"application/json, text/event-stream"}
	acceptSSE   = []string{"text/event-stream"}
)

// setHeaders sets a request's token, revision, session and, from
// 2026-07-28, standard headers. r is nil for the connection's own GET and
// DELETE.
func (c *conn) setHeaders(req *http.Request, r *request) error {
	if c.o.OAuth != nil {
		ts, err := c.o.OAuth.TokenSource(c.ctx)
		if err != nil {
			return err
		}
		if ts != nil {
			tok, err := ts.Token()
			var re *oauth2.RetrieveError
			switch {
			case err == nil && tok != nil:
				req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
			case errors.As(err, &re) && re.ErrorCode == "invalid_grant":
				// The token cannot be renewed: the request goes without,
				// and its 401 asks the handler to authorize.
			case err != nil:
				return err
			}
		}
	}
	c.mu.Lock()
	version, session := c.version, c.sessionID
	c.mu.Unlock()
	if r != nil && r.version != "" {
		version = r.version
	}
	var name string
	var params map[string]string
	if r != nil && named(r.method) && version >= version20260728 {
		name = nameOf(r.method, r.params)
		if r.method == "tools/call" {
			c.mu.Lock()
			bs := c.params[name]
			c.mu.Unlock()
			params = paramHeaders(bs, r.params)
		}
	}
	if version != "" {
		req.Header[hdrVersion] = []string{version}
	}
	if session != "" {
		req.Header[hdrSession] = []string{session}
	}
	if r == nil || version < version20260728 {
		return nil
	}
	if r.method != "" { // a request, not a response to the server's
		req.Header[hdrMethod] = []string{r.method}
		if named(r.method) {
			req.Header[hdrName] = []string{name}
		}
	}
	for k, v := range params {
		req.Header.Set(hdrParamPrefix+k, v)
	}
	return nil
}

// check turns an answer's status into the error it means, and closes the
// body of an answer it refuses.
func (c *conn) check(resp *http.Response, summary string) (err error) {
	defer func() {
		if err != nil {
			resp.Body.Close()
		}
	}()
	code := resp.StatusCode
	if transient(code) {
		return fmt.Errorf("%w: %s: %v", errRejected, summary, http.StatusText(code))
	}
	if code < 200 || code >= 300 {
		// A JSON-RPC error in the body is the server's answer to this
		// request alone.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if msg, derr := jsonmsg.Decode(bytes.TrimSpace(body)); derr == nil {
			if r, ok := msg.(*jsonrpc.Response); ok && r.Error != nil {
				return fmt.Errorf("%s: %w: %w: %v", summary, r.Error, errRejected, http.StatusText(code))
			}
		}
	}
	if code == http.StatusNotFound {
		if id := c.SessionID(); id != "" {
			return fmt.Errorf("%s: failed to connect (session ID: %v): %w", summary, id, mcp.ErrSessionMissing)
		}
	}
	if code < 200 || code >= 300 {
		return fmt.Errorf("%s: %v", summary, http.StatusText(code))
	}
	return nil
}

// maxErrorBody bounds what is read of an error status's body.
const maxErrorBody = 1 << 20

// transient reports a status that does not end the connection.
func transient(code int) bool {
	switch code {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable,
		http.StatusGatewayTimeout, http.StatusTooManyRequests:
		return true
	}
	return false
}

// readJSON reads a JSON answer. take, if not nil, is given the response
// in place of Read.
func (c *conn) readJSON(resp *http.Response, summary string, listing bool, take func(*jsonrpc.Response)) {
	b := getBuffer()
	defer putBuffer(b)
	_, err := b.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.fail(fmt.Errorf("%s: failed to read body: %v", summary, err))
		return
	}
	msg, err := jsonmsg.Decode(bytes.TrimSpace(b.Bytes()))
	if err != nil {
		c.fail(fmt.Errorf("%s: failed to decode response: %v", summary, err))
		return
	}
	if r, ok := msg.(*jsonrpc.Response); ok && take != nil {
		take(r)
		return
	}
	c.deliver(msg, listing)
}

// startStream opens the standalone event stream of 2025-11-25, once, and
// reads it from another goroutine. It waits for the stream's headers, as
// go-sdk's client does, so that what the server sends there once the
// handshake is over finds the stream open. A server that offers none says
// so with 405 (or, as some do, another 4xx, or a body that is not a
// stream).
func (c *conn) startStream() {
	c.mu.Lock()
	start := !c.streaming && !c.o.NoStandaloneStream && c.version != "" && c.version < version20260728
	c.streaming = c.streaming || start
	c.mu.Unlock()
	if !start {
		return
	}
	resp, err := c.get(c.ctx, "", 0, true)
	if err != nil {
		if c.ctx.Err() == nil {
			c.fail(fmt.Errorf("standalone SSE request failed (session ID: %v): %v", c.SessionID(), err))
		}
		return
	}
	if resp.StatusCode == http.StatusMethodNotAllowed ||
		mediaType(resp.Header.Get("Content-Type")) != "text/event-stream" ||
		resp.StatusCode >= 400 && resp.StatusCode < 500 {
		resp.Body.Close()
		return
	}
	const summary = "standalone SSE stream"
	if err := c.check(resp, summary); err != nil {
		c.fail(err)
		return
	}
	go c.follow(c.ctx, resp, summary, nil, false, nil)
}

// follow reads a stream, and opens it again from its last event when it
// breaks off, as long as that makes progress. call is the request a POST's
// stream answers, nil for the standalone stream; take, if not nil, is given
// call's response in place of Read.
func (c *conn) follow(ctx context.Context, resp *http.Response, summary string, call *jsonrpc.Request, listing bool, take func(*jsonrpc.Response)) {
	var prev string
	tries := 0
	for {
		last, delay, over := c.readStream(ctx, resp, summary, call, listing, take)
		if over || last == "" && call != nil {
			return
		}
		if last != "" && last != prev {
			tries, prev = 0, last
		} else if tries++; tries > c.o.MaxRetries {
			if ctx.Err() == nil {
				c.fail(fmt.Errorf("%s: exceeded %d retries without progress (session ID: %v)", summary, c.o.MaxRetries, c.SessionID()))
			}
			return
		}
		next, err := c.get(ctx, last, delay, false)
		if err != nil {
			if ctx.Err() == nil {
				c.fail(fmt.Errorf("%s: failed to reconnect (session ID: %v): %v", summary, c.SessionID(), err))
			}
			return
		}
		if err := c.check(next, summary); err != nil {
			c.fail(err)
			return
		}
		resp = next
	}
}

// readStream reads one stream's events and hands on their messages. It
// returns the last event id and the delay the server asked for before a
// reconnection, and over when nothing is left to read: the call was
// answered, the reader gave up or the connection failed.
func (c *conn) readStream(ctx context.Context, resp *http.Response, summary string, call *jsonrpc.Request, listing bool, take func(*jsonrpc.Response)) (last string, delay time.Duration, over bool) {
	ev := newEvents(resp.Body, c.o.MaxEventBytes)
	defer func() {
		if ev.ended() {
			// Read to its end (go-sdk's server ends a call's stream with
			// its answer, and the end often comes in the answer's read):
			// the connection is free already, and nothing is left to bound.
			_ = resp.Body.Close()
		} else {
			drain(resp.Body)
		}
		ev.release()
	}()
	for {
		err := ev.next()
		if err != nil {
			if ctx.Err() != nil {
				return "", 0, true // the caller gave up
			}
			if errors.Is(err, errEventTooLong) {
				c.fail(fmt.Errorf("%s: %v", summary, err))
				return "", 0, true
			}
			break
		}
		if ev.id != "" {
			last = ev.id
		}
		if ev.retry >= 0 {
			delay = time.Duration(ev.retry) * time.Millisecond
		}
		if len(ev.data) == 0 || !ev.message {
			continue // a priming event, or an event of another name
		}
		msg, err := jsonmsg.Decode(ev.data)
		if err != nil {
			c.fail(fmt.Errorf("%s: failed to decode event: %v", summary, err))
			return "", 0, true
		}
		r, ok := msg.(*jsonrpc.Response)
		if ok && call != nil && r.ID == call.ID && take != nil {
			take(r)
			return "", 0, true
		}
		if !c.deliver(msg, listing) {
			return "", 0, true
		}
		if ok && call != nil && r.ID == call.ID {
			return "", 0, true
		}
	}
	if last == "" && call != nil {
		// Nothing to resume from: the call gets its answer from here.
		end := &jsonrpc.Response{ID: call.ID, Error: errNoResponse}
		if take != nil {
			take(end)
		} else {
			c.deliver(end, false)
		}
	}
	return last, delay, false
}

// errNoResponse answers a call whose stream ended without its response and
// cannot be resumed.
var errNoResponse = errors.New("request terminated without response")

// drain reads what is left of body, so that its connection can be reused,
// and closes it. It reads at most maxDrain bytes for at most drainWait: a
// server that holds a stream open past its answer costs the call drainWait
// and the connection, not the call's deadline. A server that ends its
// stream with its answer costs the call nothing, and the timer never
// fires; readStream does not drain a stream it read to its end at all.
func drain(body io.ReadCloser) {
	drains.Add(1)
	t := time.AfterFunc(drainWait, func() { _ = body.Close() }) // ends a read waiting on it
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxDrain))
	t.Stop()
	_ = body.Close()
}

// drains counts the calls of drain, for tests: each arms a timer, and a
// timer armed per call costs a wake of the thread waiting on the network.
var drains atomic.Int64

// maxDrain and drainWait bound what drain reads of a stream's rest.
const (
	maxDrain  = 64 << 10
	drainWait = 100 * time.Millisecond
)

// get opens an event stream: the standalone one, or the one a stream
// being resumed from event last goes on in. It waits before each attempt
// but an initial one, for delay when the server asked for one, and tries
// up to MaxRetries times when requests fail.
func (c *conn) get(ctx context.Context, last string, delay time.Duration, initial bool) (*http.Response, error) {
	attempt := 1
	if initial {
		attempt = 0
	}
	wait := backoff(attempt)
	if delay > 0 {
		wait = delay
	}
	var lastErr error
	for ; attempt <= c.o.MaxRetries; attempt++ {
		t := time.NewTimer(wait)
		select {
		case <-c.done:
			t.Stop()
			return nil, errors.New("connection closed by client during reconnect")
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.o.Endpoint, nil)
		if err != nil {
			return nil, err
		}
		if err := c.setHeaders(req, nil); err != nil {
			return nil, err
		}
		if last != "" {
			req.Header.Set(hdrLastEventID, last)
		}
		req.Header["Accept"] = acceptSSE
		resp, err := c.o.Client.Do(req)
		if err == nil {
			return resp, nil
		}
		lastErr = err
		wait = backoff(attempt + 1)
	}
	if lastErr != nil {
		return nil, fmt.Errorf("connection failed after %d attempts: %w", c.o.MaxRetries, lastErr)
	}
	return nil, fmt.Errorf("connection aborted after %d attempts", c.o.MaxRetries)
}

// backoff is the wait before attempt n of opening a stream again: none for
// the first, then 1 s growing by half each time up to 30 s, with as much
// again of jitter.
func backoff(n int) time.Duration {
	if n == 0 {
		return 0
	}
	d := time.Second
	for i := 1; i < n && d < 30*time.Second; i++ {
		d += d / 2
	}
	d = min(d, 30*time.Second)
	return d + rand.N(d)
}

// Close ends the session with a DELETE (when there is one and the server
// has not already dropped it), and stops every stream being read.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		if id := c.SessionID(); id != "" && !errors.Is(c.failure(), mcp.ErrSessionMissing) {
			c.closeErr = c.delete()
		}
		c.cancel()
		close(c.done)
	})
	return c.closeErr
}

func (c *conn) delete() error {
	ctx, stop := context.WithTimeout(c.ctx, closeTimeout)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.o.Endpoint, nil)
	if err != nil {
		return err
	}
	if err := c.setHeaders(req, nil); err != nil {
		return err
	}
	resp, err := c.o.Client.Do(req)
	if err != nil {
		return err
	}
	drain(resp.Body)
	return nil
}

// mediaType is the media type of a Content-Type, lower case, without
// parameters.
func mediaType(v string) string {
	mt, _, _ := strings.Cut(v, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// settled is the revision the result of an initialize (its
// protocolVersion) or of a server/discover that asked for revision asked
// (that revision if the server supports it, else the newest it supports
// from 2026-07-28 on, which go-sdk's client then asks for) settles, or "".
func settled(result []byte, asked string) string {
	var res struct {
		ProtocolVersion   string   `json:"protocolVersion"`
		SupportedVersions []string `json:"supportedVersions"`
	}
	if jsonmsg.Parse(result, &res) != nil {
		return ""
	}
	if res.ProtocolVersion != "" {
		return res.ProtocolVersion
	}
	best := ""
	for _, v := range res.SupportedVersions {
		if v == asked {
			return v
		}
		if v >= version20260728 && v <= latest && v > best {
			best = v
		}
	}
	return best
}

// latest is the newest revision go-sdk's client speaks.
const latest = version20260728

var (
	_ mcp.Transport  = (*transport)(nil)
	_ mcp.Connection = (*conn)(nil)
)
