package runtime

import "context"

// Progress is one progress notification of a call.
type Progress struct {
	Progress, Total float64
	Message         string
}

// WithProgress asks the tool's source for progress notifications and
// delivers them to f, on the runtime's goroutine: f must not block.
func WithProgress(f func(Progress)) CallOption {
	return func(c *callConfig) { c.progress = f }
}

type progressKey struct{}

// ProgressOf returns the function a call's progress goes to, or nil when
// its caller asked for none. A kind whose calls report progress (an MCP
// server's notifications/progress) reads it from the call's context.
func ProgressOf(ctx context.Context) func(Progress) {
	f, _ := ctx.Value(progressKey{}).(func(Progress))
	return f
}
