// Package fleet tests that a fleet of `heddle serve` workers behind a load
// balancer behaves as one worker: three workers of one configuration share
// a Redis (serve.state kind redis) and one approval key, and HAProxy sends
// each request to the next of them in turn. Through the balancer, as a
// caller would, the test asserts:
//
//   - a caller's rate limit (policies.limits, by caller) holds across the
//     fleet: 30 calls admit exactly 10, the others are TOOL_RATE_LIMITED;
//   - the tools a conversation loaded with load_tools (Heddle-Conversation)
//     are callable whichever worker a later request reaches;
//   - an MCP session of the facade (/mcp/{agent}, protocol 2025-11-25) is
//     served by every worker, not only the one that initialised it;
//   - a worker killed with SIGKILL while calls flow costs at most two
//     calls, and leaves none of its processes behind;
//   - a Redis restarted under calls costs the calls made while it is down,
//     calls recover within seconds of its return, and a limit admits at
//     most one bucket more than it would have without the restart (the
//     counters are lost with Redis' memory).
//
// The test logs what it measured, in a table at its end: how many calls
// failed and with which codes, how long calls took to recover; what an
// operator of a fleet needs to know.
//
// Everything runs on 127.0.0.1 with ports the kernel picks: redis-server
// (internal/testredis), the workers with the test MCP server over stdio,
// and haproxy in the foreground. The packages are Debian's redis-server
// and haproxy (integration/fleet-install.sh installs them). Without them
// the test skips with the reason; with CI=true it fails instead:
//
//	integration/fleet-install.sh && go test -race -count=1 ./integration/fleet/
//
// The package has no code of its own outside its tests.
package fleet
