package sseconn

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"
)

// ErrIdle is the error a bounded event stream's read returns once no data
// arrived for its idle bound.
var ErrIdle = errors.New("sseconn: the event stream was idle for longer than timeout_ms")

// IdleBound wraps next so that the body of every event-stream response
// (Content-Type text/event-stream) is cut after d without data: its read
// returns ErrIdle and the connection is closed, so that the session ends
// and its client reconnects. Other responses are untouched.
func IdleBound(next http.RoundTripper, d time.Duration) http.RoundTripper {
	return idleTransport{next: next, d: d}
}

type idleTransport struct {
	next http.RoundTripper
	d    time.Duration
}

func (t idleTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.next.RoundTrip(req)
	if err != nil || t.d <= 0 {
		return res, err
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "text/event-stream" {
		return res, nil
	}
	b := &idleBody{body: res.Body}
	b.timer = time.AfterFunc(t.d, b.expire)
	b.d = t.d
	res.Body = b
	return res, nil
}

// idleBody is an event stream's body whose every read that returns data
// pushes its deadline back.
type idleBody struct {
	body  io.ReadCloser
	d     time.Duration
	timer *time.Timer

	mu      sync.Mutex
	expired bool
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.mu.Lock()
	expired := b.expired
	b.mu.Unlock()
	if expired {
		return n, ErrIdle
	}
	if n > 0 {
		b.timer.Reset(b.d)
	}
	return n, err
}

// expire ends an idle stream: closing the body ends the read waiting on it.
func (b *idleBody) expire() {
	b.mu.Lock()
	b.expired = true
	b.mu.Unlock()
	_ = b.body.Close()
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	return b.body.Close()
}
