package a2alive

import "time"

// SetBackoff sets the bounds of the background card fetches, for tests.
func SetBackoff(first, max time.Duration) { backoffFirst, backoffMax = first, max }
