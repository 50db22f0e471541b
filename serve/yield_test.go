package serve_test

import "runtime"

// yieldProcessor is the standard library's runtime.Gosched, from a file of
// its own: heddle's runtime package has the same name.
func yieldProcessor() { runtime.Gosched() }
