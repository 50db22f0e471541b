// Package sseconn connects go-sdk's SSE client with a context that outlives
// the handshake.
//
// go-sdk's SSE client binds its event stream — the session's only way in —
// to the context its Connect gets, so connecting under the handshake's
// deadline would end the session as soon as the handshake returned. The
// transport of NewTransport gives the inner Connect a context of its own:
// the handshake's context still aborts a connect in progress, and the
// stream ends when the connection is closed.
//
//	t := sseconn.NewTransport(&mcp.SSEClientTransport{Endpoint: url, HTTPClient: hc})
//	sess, err := client.Connect(handshakeCtx, t, nil) // the session outlives handshakeCtx
package sseconn

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewTransport wraps inner, usually an *mcp.SSEClientTransport, so that the
// connections it makes live until they are closed rather than until the
// context given to Connect ends. The returned transport is safe for
// concurrent use when inner is; each Connect makes one connection.
func NewTransport(inner mcp.Transport) mcp.Transport { return transport{inner} }

type transport struct{ inner mcp.Transport }

// Connect connects inner under a context detached from ctx: ctx ending
// before the connect returns aborts it, and ends the connection if one was
// made anyway; after that only Close ends the connection's context.
func (t transport) Connect(ctx context.Context) (mcp.Connection, error) {
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := t.inner.Connect(life)
	if !stop() { // the handshake's context ended first
		cancel()
		if err == nil {
			_ = conn.Close()
			err = ctx.Err()
		}
		return nil, err
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &connection{Connection: conn, cancel: cancel}, nil
}

// connection ends the event stream's context when it closes.
type connection struct {
	mcp.Connection
	cancel context.CancelFunc
}

// Close closes the inner connection, then ends its context. It is safe to
// call more than once when the inner Close is.
func (c *connection) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}

var (
	_ mcp.Transport  = transport{}
	_ mcp.Connection = (*connection)(nil)
)
