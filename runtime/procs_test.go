package runtime_test

import "runtime"

// gomaxprocs is the standard library's runtime.GOMAXPROCS(0), from a file
// of its own: heddle's runtime package has the same name.
func gomaxprocs() int { return runtime.GOMAXPROCS(0) }
