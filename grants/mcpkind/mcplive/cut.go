package mcplive

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// A handshake over HTTP must end at its deadline, and the transports' own
// requests do not always: the Streamable HTTP transport (mcphttp, as
// go-sdk's) opens the standalone event stream as the handshake ends and
// waits for its headers under the connection's own context, not Connect's
// — so that what a server sends once the handshake is over finds the
// stream open — and tears a failed handshake down with a DELETE that has a
// fixed 5 s of its own. A server that holds either request (or a strategy
// that hangs while asked for their credentials) would hold start-up past
// its budget, the GET forever. So the requests of an attempt that is still
// shaking hands are cut when its deadline passes: those in flight fail,
// and those that follow fail at once. The GET of the standalone stream is
// the one exception: the transport retries it with backoff (seconds)
// whatever the error, so a cut GET is answered 405 Method Not Allowed,
// which it takes for a server that offers no such stream, and stops.

// errCut is why a request of a handshake that ran out of time failed.
var errCut = errors.New("the connection attempt ran out of time")

// handshakeCut is the part of an attempt that cuts its HTTP requests.
type handshakeCut struct {
	ctx     context.Context // ends when the attempt is cut
	cut     context.CancelFunc
	shaking atomic.Bool // requests are bound to ctx while the handshake runs
}

func newHandshakeCut() *handshakeCut {
	ctx, cancel := context.WithCancel(context.Background())
	return &handshakeCut{ctx: ctx, cut: cancel}
}

// during runs the handshake connect, bound to ctx: when ctx ends first,
// every request the handshake made or makes is cut. It reports whether the
// handshake ended before its deadline; a handshake that succeeded only as
// the deadline passed has had its requests cut, its standalone stream
// among them, and must not be kept. A cut attempt's requests fail at once
// from then on, the DELETE of its teardown among them.
func (h *handshakeCut) during(ctx context.Context, connect func()) (inTime bool) {
	h.shaking.Store(true)
	stop := context.AfterFunc(ctx, h.cut)
	connect()
	if !stop() {
		return false
	}
	h.shaking.Store(false)
	return true
}

// cutTransport binds the requests of a handshake to its attempt's cut.
// Once the handshake is over, requests pass through untouched; a request
// made during it (the standalone stream) stays bound to the cut, which is
// then never made.
type cutTransport struct {
	next http.RoundTripper
	h    *handshakeCut
}

func (c cutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !c.h.shaking.Load() {
		return c.next.RoundTrip(req)
	}
	if c.h.ctx.Err() != nil {
		return refuseCut(req)
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	stop := context.AfterFunc(c.h.ctx, func() { cancel(errCut) })
	resp, err := c.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		stop()
		cancel(nil)
		if context.Cause(ctx) == errCut {
			return refuseCut(req)
		}
		return nil, err
	}
	resp.Body = &cutBody{ReadCloser: resp.Body, release: func() { stop(); cancel(nil) }}
	return resp, nil
}

// refuseCut answers a request of a cut handshake: errCut, or 405 to a GET.
func refuseCut(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	if req.Method != http.MethodGet {
		return nil, errCut
	}
	return &http.Response{
		Status: "405 Method Not Allowed", StatusCode: http.StatusMethodNotAllowed,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: http.NoBody, Request: req,
	}, nil
}

// cutBody releases its request's binding to the cut when it is closed.
type cutBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *cutBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
