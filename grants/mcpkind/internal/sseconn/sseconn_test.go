package sseconn

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeTransport records the context its connection was made under.
type fakeTransport struct {
	during func(ctx context.Context) // runs inside Connect
	conn   *fakeConn
	err    error
}

func (f *fakeTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	if f.during != nil {
		f.during(ctx)
	}
	if f.err != nil {
		return nil, f.err
	}
	f.conn = &fakeConn{ctx: ctx}
	return f.conn, nil
}

type fakeConn struct {
	ctx    context.Context
	closed bool
}

func (c *fakeConn) Read(context.Context) (jsonrpc.Message, error) { return nil, nil }
func (c *fakeConn) Write(context.Context, jsonrpc.Message) error  { return nil }
func (c *fakeConn) Close() error                                  { c.closed = true; return nil }
func (c *fakeConn) SessionID() string                             { return "" }

// TestConnectionOutlivesHandshake: the connection's context survives the
// end of the handshake's and ends when the connection closes.
func TestConnectionOutlivesHandshake(t *testing.T) {
	f := &fakeTransport{}
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := NewTransport(f).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if f.conn.ctx.Err() != nil {
		t.Fatal("the connection's context ended with the handshake's")
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	if !f.conn.closed || f.conn.ctx.Err() == nil {
		t.Errorf("Close: inner closed %v, context %v", f.conn.closed, f.conn.ctx.Err())
	}
}

// TestHandshakeEndsFirst: a handshake context that ends during the connect
// aborts it: the context the inner connect got ends, a connection made
// anyway is closed, and Connect reports the handshake's error.
func TestHandshakeEndsFirst(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var inner context.Context
	f := &fakeTransport{during: func(c context.Context) { inner = c; cancel() }}
	conn, err := NewTransport(f).Connect(ctx)
	if conn != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Connect = %v, %v; want context.Canceled", conn, err)
	}
	if inner.Err() == nil || !f.conn.closed {
		t.Errorf("inner context %v, connection closed %v", inner.Err(), f.conn.closed)
	}

	boom := errors.New("boom")
	f = &fakeTransport{during: func(c context.Context) { inner = c }, err: boom}
	if _, err := NewTransport(f).Connect(context.Background()); !errors.Is(err, boom) {
		t.Errorf("Connect = %v, want the inner error", err)
	}
	if inner.Err() == nil {
		t.Error("a failed connect left its context running")
	}
}
