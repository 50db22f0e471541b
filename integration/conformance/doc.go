// Package conformance runs the MCP conformance suite
// (@modelcontextprotocol/conformance 0.1.16, all 26 client scenarios)
// against heddle's client: cmd/heddle-conformance-client, which opens
// heddle's runtime with the oauth strategy (auth/oauth). Scenarios that
// cannot pass are listed, with the reason, in expected-failures.yml; the
// suite fails on any other failure, and on a listed scenario that passes.
//
// The suite and the Node 22 it needs are pinned in package-lock.json and
// installed by setup.sh into node_modules. Without them the test skips with
// the reason; with CI=true it fails instead:
//
//	integration/conformance/setup.sh && go test -race ./integration/conformance/
//
// ../listen-localhost.cjs keeps the suite's mock servers on 127.0.0.1. The
// package has no code of its own outside its test.
package conformance
