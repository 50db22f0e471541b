// Package integration holds heddle's tests against real third-party
// software: MCP servers from npm (server-everything over stdio, Streamable
// HTTP and SSE; server-filesystem over stdio), started by the tests on
// loopback and stopped by them.
//
// The software is pinned in package-lock.json and installed by setup.sh
// into node_modules (see README.md). Without it the tests skip with the
// reason; with CI=true they fail instead, so CI cannot pass by skipping:
//
//	integration/setup.sh && go test -race ./integration/
//
// The package has no code of its own outside its tests.
package integration
