package runtime

import "github.com/heddlehq/heddle/runtime/driver"

// WithProgress asks the tool's source for progress notifications and
// delivers them to f, on the runtime's goroutine: f must not block.
func WithProgress(f func(driver.Progress)) CallOption {
	return func(c *callConfig) { c.opts.Progress = f }
}
