package serve

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
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
		// Every request's context descends from the drain's cut.
		BaseContext: func(net.Listener) context.Context { return s.drain.base },
		// What net/http logs itself: accept errors, TLS handshakes.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// Serve accepts connections on ln and serves them until Shutdown, with
// the timeouts and bounds of serve.limits: at most max_connections
// connections are served at once. At that bound, a new connection makes
// room by closing the connection that has been idle longest (a keep-alive
// connection between requests); when none is idle it waits until one
// closes (the connections after it wait in the listener's backlog). The probes are answered
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

// connLimit bounds the open connections of a Server: one slot per
// connection, taken before a connection is accepted and given back when it
// closes. It knows which connections are idle, to close one when a new
// connection needs its slot.
type connLimit struct {
	slots chan struct{}
	// wake has a value when a connection turned idle: a listener waiting
	// for a slot looks again for one to close.
	wake chan struct{}
	mu   sync.Mutex
	idle map[net.Conn]time.Time // since when
}

func newConnLimit(n int) *connLimit {
	return &connLimit{slots: make(chan struct{}, n), wake: make(chan struct{}, 1), idle: map[net.Conn]time.Time{}}
}

// track is the http.Server's ConnState hook.
func (c *connLimit) track(conn net.Conn, state http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if state == http.StateIdle {
		c.idle[conn] = time.Now()
		select {
		case c.wake <- struct{}{}:
		default:
		}
		return
	}
	delete(c.idle, conn)
}

// closeIdlest closes the connection idle longest, and reports whether
// there was one. Its slot is free when this returns.
func (c *connLimit) closeIdlest() bool {
	c.mu.Lock()
	var (
		oldest net.Conn
		since  time.Time
	)
	for conn, t := range c.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = conn, t
		}
	}
	delete(c.idle, oldest)
	c.mu.Unlock()
	if oldest == nil {
		return false
	}
	_ = oldest.Close()
	return true
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
// one of the connection idle longest, closed for it, or the first one a
// connection frees.
func (l *limitListener) acquire() error {
	for {
		select {
		case l.c.slots <- struct{}{}:
			return nil
		default:
		}
		if l.c.closeIdlest() {
			continue
		}
		select {
		case l.c.slots <- struct{}{}:
			return nil
		case <-l.c.wake:
		case <-l.done:
			return &net.OpError{Op: "accept", Net: l.Addr().Network(), Addr: l.Addr(), Err: net.ErrClosed}
		}
	}
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
	_ net.Listener = (*limitListener)(nil)
	_ net.Conn     = (*limitConn)(nil)
)
