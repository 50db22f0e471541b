// Package faults is heddle's fault matrix: every fault a dependency can
// show — a handshake that hangs or dribbles, a crash mid-call, a listing
// that fails or never ends, a malformed answer, a 100 MB result, a secret
// that is missing or rotated, a name server or TLS that fails — on every
// transport it applies to (stdio, Streamable HTTP, SSE, and the A2A and
// SQL kinds where it applies), under ai.remote_clients required and
// optional. Each cell is a test with an asserted outcome: the code, a
// bound on the time start-up and calls take, the healthy sibling's calls
// unaffected, and no goroutine, file descriptor or process left behind.
//
// The servers are real processes: the test MCP server (heddle-testmcp)
// over stdio and HTTP, the example auth plugin and a misbehaving one, and
// plain listeners for what no server would do. TestSurfaces drives the
// stock heddle binary's commands, its invoke API and its MCP facade
// through the same faults and asserts that every failure carries a code.
//
// docs/reliability.md's matrix is generated from the table the tests
// assert (TestReliabilityDoc fails when it is stale; -update rewrites it).
// make test runs the fast cells; HEDDLE_FAULTS=all (make faults) runs the
// slow one too: 100,000 tools.
package faults
