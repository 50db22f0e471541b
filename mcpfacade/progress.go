package mcpfacade

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// progressBuffer is how many progress notifications of one call may wait
// to be sent; more are dropped, never blocking the call.
const progressBuffer = 16

// forwardProgress asks a call's source for progress and sends each
// notification to the host under its token, in order, from a goroutine of
// its own (the runtime's callback must not block). end stops it once the
// call has returned.
func forwardProgress(ctx context.Context, ss *mcp.ServerSession, token any) (opt runtime.CallOption, end func()) {
	ch := make(chan driver.Progress, progressBuffer)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for p := range ch {
			_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: p.Message})
		}
	}()
	var mu sync.Mutex // holds closed and sends on ch: a late notification must not send on a closed channel
	closed := false
	opt = runtime.WithProgress(func(p driver.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		select {
		case ch <- p:
		default:
		}
	})
	return opt, func() {
		mu.Lock()
		closed = true
		close(ch)
		mu.Unlock()
		<-sent
	}
}
