// Package testmcp is heddle's MCP test server: a go-sdk server whose tools and
// faults are set by [Options], served in process, over stdio, over Streamable
// HTTP (stateful, or stateless for the 2026-07-28 protocol era) and over
// legacy SSE. The heddle-testmcp command wraps it; every Options field is one
// of its flags ([RegisterFlags], [Options.Args]).
//
// Every server has the fixed tools ([FixedTools]: echo, add, sleep, image,
// fail, env, big, add_tool, remove_tool, pid, spawn_child) unless
// [Options.NoFixedTools] is set, plus one echoing tool per name in
// [Options.Tools] and [Options.NumTools]. Faults for tests of heddle's
// runtime: slow or hung handshakes, listings that fail, hung calls, a crash
// after N calls, a list_changed storm, garbage on stdout, oversized results.
//
// In process, over in-memory transports:
//
//	srv := testmcp.NewServer(&testmcp.Options{PageSize: 2, HangOnCall: []string{"echo"}})
//	st, ct := mcp.NewInMemoryTransports()
//	ss, err := srv.Connect(ctx, st, nil) // connect the server first
//	…
//	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
//	defer func() { cs.Close(); ss.Wait() }()
//
// Over HTTP, with [Handler] (Streamable HTTP at /mcp, SSE at /sse):
//
//	ts := httptest.NewServer(testmcp.Handler(&testmcp.Options{Stateless: true}))
//	defer ts.Close()
//	transport := &mcp.StreamableClientTransport{Endpoint: ts.URL + testmcp.StreamablePath}
//
// As a child process over stdio (build cmd/heddle-testmcp first):
//
//	opts := &testmcp.Options{CrashAfter: 2}
//	cmd := exec.Command(bin, opts.Args()...)
//	transport := &mcp.CommandTransport{Command: cmd}
//
// The binary also serves HTTP: `heddle-testmcp --transport http --listen
// 127.0.0.1:0` prints "listening on http://127.0.0.1:PORT" on stdout
// ([ListenAndServe]).
package testmcp
