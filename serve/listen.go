package serve

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// httpServer is the http.Server of s, with the timeouts and header bound of
// serve.limits. ReadHeaderTimeout closes a connection that is slow to send
// its header; ReadTimeout one that is slow to send its body; IdleTimeout a
// keep-alive connection with no request; WriteTimeout outlasts every call.
func (s *Server) httpServer() *http.Server {
	l := s.cfg.Limits
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: ms(l.ReadHeaderTimeoutMS),
		ReadTimeout:       ms(l.ReadTimeoutMS),
		WriteTimeout:      ms(l.WriteTimeoutMS),
		IdleTimeout:       ms(l.IdleTimeoutMS),
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ConnState:         s.conns.track,
		// A request finds its connection, to count it among those sending
		// a request while its body is read (connLimit.readingBody).
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		// Every request's context descends from the drain's cut.
		BaseContext: func(net.Listener) context.Context { return s.drain.base },
		// What net/http logs itself: accept errors, TLS handshakes.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// Serve accepts connections on ln and serves them until Shutdown, with
// the timeouts and bounds of serve.limits: at most max_connections
// connections are served at once, fewer when the process's open-file limit
// leaves room for fewer (connBound). At that bound, a new connection makes
// room by closing the connection that has been idle longest (a keep-alive
// connection between requests) or, when none is idle, the one that has
// been sending its request longest, when for over StallAge (a header or a
// body that does not come: a slow or hostile client); when there is none
// it waits until one closes (the connections after it wait in the
// listener's backlog). So the accept loop never runs out of descriptors,
// and a probe is answered while clients stall their requests. A connection
// whose call runs is never closed for another. The probes are answered
// like any request; they are never refused for a Host, a caller or
// max_in_flight. Serve returns http.ErrServerClosed once Shutdown has
// begun.
func (s *Server) Serve(ln net.Listener) error {
	l, ok := s.drain.add(s.conns.listener(ln))
	if !ok {
		return http.ErrServerClosed
	}
	err := s.srv.Serve(l)
	if s.drain.draining() {
		return http.ErrServerClosed // Shutdown closed l
	}
	return err
}

// StallAge is how long a connection must have been sending its request (its
// header, or a body the handler reads) before a new connection may close it
// for its slot, at the connection bound. A client that sends its request at
// once is never closed for another.
const StallAge = time.Second

// connKey is the context key of the connection a request came on (the
// http.Server's ConnContext).
type connKey struct{}

// connLimit bounds the open connections of a Server: one slot per
// connection, taken before a connection is accepted and given back when it
// closes. It knows which connections are idle, and which are still sending
// a request, to close one when a new connection needs its slot.
type connLimit struct {
	slots chan struct{}
	// wake has a value when a connection turned idle: a listener waiting
	// for a slot looks again for one to close.
	wake chan struct{}
	mu   sync.Mutex
	idle map[net.Conn]time.Time // since when
	// reading are the connections sending a request: its header (from
	// StateNew until StateActive), or a body the handler reads (readingBody).
	reading map[net.Conn]time.Time // since when
}

func newConnLimit(n int) *connLimit {
	return &connLimit{slots: make(chan struct{}, n), wake: make(chan struct{}, 1),
		idle: map[net.Conn]time.Time{}, reading: map[net.Conn]time.Time{}}
}

// track is the http.Server's ConnState hook.
func (c *connLimit) track(conn net.Conn, state http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.idle, conn)
	delete(c.reading, conn)
	switch state {
	case http.StateNew:
		c.reading[conn] = time.Now()
	case http.StateIdle:
		c.idle[conn] = time.Now()
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// readingBody counts r's connection among those sending their request
// until r's body is read to its end, fails or is closed, or done is
// called. A request with no body, or not served by Serve, is left as it
// is.
func (c *connLimit) readingBody(r *http.Request) (done func()) {
	conn, ok := r.Context().Value(connKey{}).(net.Conn)
	if !ok || r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return noop
	}
	c.mu.Lock()
	c.reading[conn] = time.Now()
	c.mu.Unlock()
	b := &watchedBody{ReadCloser: r.Body, c: c, conn: conn}
	r.Body = b
	return b.end
}

// watchedBody is the body of a request on conn: once it is read to its
// end, a read fails or it is closed, conn no longer counts among those
// sending their request.
type watchedBody struct {
	io.ReadCloser
	c     *connLimit
	conn  net.Conn
	ended atomic.Bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.end()
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.end()
	return b.ReadCloser.Close()
}

func (b *watchedBody) end() {
	if b.ended.CompareAndSwap(false, true) {
		b.c.mu.Lock()
		delete(b.c.reading, b.conn)
		b.c.mu.Unlock()
	}
}

// makeRoom closes the connection idle longest or, when none is idle, the
// one sending its request longest, when for StallAge at least; it reports
// whether it closed one, and otherwise in how long the oldest connection
// sending its request will have been for StallAge (0: there is none). The
// slot of the one closed is free when this returns.
func (c *connLimit) makeRoom() (closed bool, retry time.Duration) {
	c.mu.Lock()
	victim, _ := oldest(c.idle)
	if victim != nil {
		delete(c.idle, victim)
	} else if conn, since := oldest(c.reading); conn != nil {
		if wait := StallAge - time.Since(since); wait > 0 {
			c.mu.Unlock()
			return false, wait
		}
		victim = conn
		delete(c.reading, conn)
	}
	c.mu.Unlock()
	if victim == nil {
		return false, 0
	}
	_ = victim.Close()
	return true, 0
}

// oldest is the connection of m with the earliest time, and that time.
func oldest(m map[net.Conn]time.Time) (net.Conn, time.Time) {
	var (
		first net.Conn
		since time.Time
	)
	for conn, t := range m {
		if first == nil || t.Before(since) {
			first, since = conn, t
		}
	}
	return first, since
}

// listener is ln with c's bound on its connections.
func (c *connLimit) listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, c: c, done: make(chan struct{})}
}

// limitListener hands a connection to the server only once it has a slot
// for it. While one connection waits for its slot, Accept is not called
// again: the next ones wait in the listener's backlog.
type limitListener struct {
	net.Listener
	c    *connLimit
	done chan struct{} // closed by Close: a waiting Accept gives up
	once sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := l.acquire(); err != nil {
		conn.Close()
		return nil, err
	}
	return &limitConn{Conn: conn, release: func() { <-l.c.slots }}, nil
}

// acquire takes a slot for a connection just accepted: a free one, or the
// one of a connection closed for it (makeRoom), or the first one a
// connection frees.
func (l *limitListener) acquire() error {
	for {
		select {
		case l.c.slots <- struct{}{}:
			return nil
		default:
		}
		closed, retry := l.c.makeRoom()
		if closed {
			continue
		}
		if got, err := l.wait(retry); got || err != nil {
			return err
		}
	}
}

// wait waits until a slot is free, and takes it (got), or a connection
// turned idle, or retry passed (when not 0: a connection will then have
// been sending its request for StallAge), or l is closed (err).
func (l *limitListener) wait(retry time.Duration) (got bool, err error) {
	var stalled <-chan time.Time
	if retry > 0 {
		t := time.NewTimer(retry)
		defer t.Stop()
		stalled = t.C
	}
	select {
	case l.c.slots <- struct{}{}:
		return true, nil
	case <-l.c.wake:
	case <-stalled:
	case <-l.done:
		return false, &net.OpError{Op: "accept", Net: l.Addr().Network(), Addr: l.Addr(), Err: net.ErrClosed}
	}
	return false, nil
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back when it is first closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

var (
	_ net.Listener  = (*limitListener)(nil)
	_ net.Conn      = (*limitConn)(nil)
	_ io.ReadCloser = (*watchedBody)(nil)
)
