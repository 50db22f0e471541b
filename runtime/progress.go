package runtime

import "github.com/heddlehq/heddle/runtime/driver"

// WithProgress asks the tool's source for progress notifications and
// delivers them to f, on the runtime's goroutine: f must not block.
func WithProgress(f func(driver.Progress)) CallOption {
	return func(c *callConfig) { c.opts.Progress = f }
}

// WithInput hands the input a server asks for during the call to the
// caller (driver.Input): the call's result is then the server's
// input_required result when it asks, and in.State and in.Responses, when
// set, resume a call that asked.
func WithInput(in *driver.Input) CallOption {
	return func(c *callConfig) { c.opts.Input = in }
}
