package mcpfacade

import (
	"context"
	"errors"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Serve serves ts as one session on t (for `heddle mcp`, an
// mcp.StdioTransport) until the host ends it (closes stdin) or ctx ends.
// It fails before serving when the toolset cannot be listed (the context's
// error, or TOOL_NAME_CONFLICT); once serving, it returns nil when the host
// ends the session.
func Serve(ctx context.Context, ts Toolset, t mcp.Transport, opts *Options) error {
	s, err := newSession(ctx, ts, opts, nil, nil)
	if err != nil {
		return err
	}
	// The session follows upstream changes from the start: a host of
	// 2026-07-28 never initializes (it hears of changes on
	// subscriptions/listen).
	fctx, cancel := context.WithCancel(ctx)
	followed := make(chan struct{})
	s.startOnce.Do(func() {
		go func() {
			defer close(followed)
			s.follow(fctx, nil)
		}()
	})
	err = s.srv.Run(ctx, t)
	cancel()
	<-followed
	if ctx.Err() != nil || hostEnded(err) {
		return nil
	}
	return err
}

// hostEnded reports an error of a session's connection that only says the
// host has gone: its end of the pipe closed (stdin's EOF, an in-memory
// transport's closed pipe), while the session was writing to it.
func hostEnded(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe)
}
