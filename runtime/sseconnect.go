package runtime

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseTransport connects an SSE client with a context that outlives the
// handshake. go-sdk's SSE client binds its event stream — the session's only
// way in — to the context its Connect gets, so connecting under the
// handshake's deadline would end the session as soon as the handshake
// returned. The handshake's context still aborts a connect in progress; the
// stream ends when the connection is closed.
type sseTransport struct{ mcp.Transport }

func (t sseTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := t.Transport.Connect(life)
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
	return &sseConn{Connection: conn, cancel: cancel}, nil
}

// sseConn ends the event stream's context when the connection closes.
type sseConn struct {
	mcp.Connection
	cancel context.CancelFunc
}

func (c *sseConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}

var (
	_ mcp.Transport  = sseTransport{}
	_ mcp.Connection = (*sseConn)(nil)
)
