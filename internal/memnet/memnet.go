// Package memnet is an in-memory network for tests that run in a
// [testing/synctest] bubble: listeners at loopback addresses, and a dialer
// that reaches them over [net.Pipe]. Every wait on it is a channel
// operation, so a goroutine blocked on a connection is durably blocked and
// the bubble's clock moves on; one blocked on a real socket never is, which
// would keep a bubble's time still.
//
//	synctest.Test(t, func(t *testing.T) {
//		n := memnet.New()
//		srv := n.Server(handler) // an *httptest.Server on n
//		defer srv.Close()
//		tr := n.Transport()
//		defer tr.CloseIdleConnections()
//		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
//		…
//	})
//
// A Network, its listeners and their connections belong to the bubble they
// were made in: create them inside it. A test must close what it opened —
// servers, sessions, idle connections — before the bubble ends, since the
// bubble waits for every goroutine started in it.
package memnet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"syscall"
)

// firstPort is the port of a Network's first listener; later ones count up.
const firstPort = 10000

// Network is a set of listeners reached by address. It is safe for
// concurrent use.
type Network struct {
	mu        sync.Mutex
	listeners map[string]*listener
	next      int // the next port to hand out, for listeners and for dialers
}

// New returns a network with no listeners.
func New() *Network {
	return &Network{listeners: map[string]*listener{}, next: firstPort}
}

// Listen returns a listener at addr, a "host:port" string; an empty addr or
// port 0 picks a port on 127.0.0.1 no listener of n has had. It fails when
// a listener of n is open at addr. Closing the listener frees the address.
func (n *Network) Listen(addr string) (net.Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	host, port := "127.0.0.1", "0"
	if addr != "" {
		var err error
		if host, port, err = net.SplitHostPort(addr); err != nil {
			return nil, &net.OpError{Op: "listen", Net: "tcp", Err: err}
		}
	}
	if port == "0" {
		port = fmt.Sprint(n.port())
	}
	a, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(host, port))
	if err != nil || a.IP == nil {
		return nil, &net.OpError{Op: "listen", Net: "tcp", Err: fmt.Errorf("memnet: address %q is not an IP and port", addr)}
	}
	if _, taken := n.listeners[a.String()]; taken {
		return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: a, Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}
	}
	l := &listener{n: n, addr: a, conns: make(chan net.Conn), done: make(chan struct{})}
	n.listeners[a.String()] = l
	return l, nil
}

// port hands out a port number; n.mu is held.
func (n *Network) port() int {
	n.next++
	return n.next - 1
}

// DialContext connects to the listener at addr, with the signature of
// [net.Dialer.DialContext]. With no listener there the error is a refused
// connection (errors.Is(err, syscall.ECONNREFUSED)), as on a real network.
// It waits until the listener accepts, the listener closes or ctx is done.
func (n *Network) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	n.mu.Lock()
	l := n.listeners[a.String()]
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: n.port()}
	n.mu.Unlock()
	refused := &net.OpError{Op: "dial", Net: network, Addr: a, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	if l == nil {
		return nil, refused
	}
	client, server := net.Pipe()
	select {
	case l.conns <- &conn{Conn: server, local: l.addr, remote: local}:
		return &conn{Conn: client, local: local, remote: l.addr}, nil
	case <-l.done:
	case <-ctx.Done():
		refused.Err = ctx.Err()
	}
	client.Close()
	server.Close()
	return nil, refused
}

// Transport returns a new HTTP transport that dials n. Close its idle
// connections before the bubble ends.
func (n *Network) Transport() *http.Transport {
	return &http.Transport{DialContext: n.DialContext}
}

// Server starts h on a new listener of n, as httptest.NewServer does on
// loopback. Close it before the bubble ends.
func (n *Network) Server(h http.Handler) *httptest.Server {
	l, err := n.Listen("")
	if err != nil {
		panic(err) // a fresh port cannot be taken
	}
	s := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	s.Start()
	return s
}

// listener is one address of a Network.
type listener struct {
	n     *Network
	addr  *net.TCPAddr
	conns chan net.Conn // a dialer hands over the server's end here
	done  chan struct{} // closed by Close
	once  sync.Once
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
}

// Close stops accepting and frees the address; connections already
// accepted stay open.
func (l *listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.n.mu.Lock()
		if l.n.listeners[l.addr.String()] == l {
			delete(l.n.listeners, l.addr.String())
		}
		l.n.mu.Unlock()
	})
	return nil
}

func (l *listener) Addr() net.Addr { return l.addr }

// conn is one end of a pipe, with TCP addresses in place of net.Pipe's.
type conn struct {
	net.Conn
	local, remote net.Addr
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }

var (
	_ net.Listener = (*listener)(nil)
	_ net.Conn     = (*conn)(nil)
)
