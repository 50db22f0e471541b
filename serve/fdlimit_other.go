//go:build !unix

package serve

// fdLimit is 0, no limit known: this platform has no RLIMIT_NOFILE.
func fdLimit() uint64 { return 0 }
