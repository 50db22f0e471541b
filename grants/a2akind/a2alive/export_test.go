package a2alive

import (
	"time"

	"github.com/heddlehq/heddle/runtime"
)

// SetBackoff sets the bounds of the background card fetches, for tests.
func SetBackoff(first, max time.Duration) {
	runtime.DefaultBackoffFirst, runtime.DefaultBackoffMax = first, max
}
