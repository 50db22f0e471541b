// Package soak holds heddle's soak: `heddle serve` in a process of its
// own, in front of test MCP servers over stdio, Streamable HTTP and SSE
// (each in a process of its own) and an SQLite source, called by 64
// callers for minutes while a chaos loop kills servers, hangs them and
// reloads the configuration. It measures serve's goroutines, open files
// and resident memory over the run, and asserts that every call ended
// within its deadline, that every failure carried a code, that nothing
// grew, and that no process outlived serve.
//
// Its test is behind the soak build tag, so that `make test` does not run
// it; `make soak` builds what it needs, runs it without the race detector
// (it measures) and writes its report to soak-results.md and
// soak-results.json at the module root:
//
//	make soak                     # three minutes after a warm-up
//	SOAK_DURATION=20s make soak   # a quick check
//
// The package has no code of its own outside its tests.
package soak
