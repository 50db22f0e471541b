package faults_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/testmcp"
)

// fault is one row of the matrix.
type fault struct {
	id   string   // the row's name, and its test's: TestFaults/<id>/<transport>/<mode>
	what string   // the fault, for the doc
	on   []string // the transports it applies to
	slow bool     // run only with HEDDLE_FAULTS=all
	// budget is the cells' ai.startup_timeout_ms; 0 means defaultBudget.
	budget time.Duration

	// dep returns the entry of the faulty dependency x on c's transport.
	dep func(c *cell) map[string]any
	// req and opt are what start-up does under ai.remote_clients required
	// and optional.
	req, opt outcome
	// by overrides req and opt on a transport: [required, optional].
	by map[string][2]outcome
	// cellsOnly, when set, says why TestSurfaces leaves the fault to the
	// cells.
	cellsOnly string
	// then asserts what happens after a start-up that succeeded.
	then func(c *cell)
	// does says, for the doc, what then asserts.
	does string
}

// outcome is what start-up does: it fails with code, naming x alone; or
// it starts with x down with code ("" means ready).
type outcome struct {
	fails bool
	code  diag.Code
}

func (f *fault) outcome(mode, tr string) outcome {
	req, opt := f.req, f.opt
	if o, ok := f.by[tr]; ok {
		req, opt = o[0], o[1]
	}
	o := opt
	if mode == "required" {
		o = req
	}
	if o.code == diag.MCPServerUnreachable { // the kinds' own words for it
		switch tr {
		case "a2a":
			o.code = diag.A2AAgentUnreachable
		case "sql":
			o.code = diag.SQLSourceUnreachable
		}
	}
	return o
}

// Outcomes of start-up that recur.
func failsOrDown(code diag.Code) (outcome, outcome) {
	return outcome{fails: true, code: code}, outcome{code: code}
}

func failsAlways(code diag.Code) (outcome, outcome) {
	return outcome{fails: true, code: code}, outcome{fails: true, code: code}
}

var ready = outcome{}

var mcpTransports = []string{"stdio", "http", "sse"}
var httpTransports = []string{"http", "sse"}

// faults is the matrix. Its order is the doc's.
var faults = func() []*fault {
	unreachableReq, unreachableOpt := failsOrDown(diag.MCPServerUnreachable)
	listReq, listOpt := failsOrDown(diag.MCPListFailed)
	fs := []*fault{
		{
			id: "handshake-hangs", what: "The server accepts the connection (or starts) and never answers its handshake",
			on: append(mcpTransports, "a2a", "sql"), req: unreachableReq, opt: unreachableOpt,
			dep: func(c *cell) map[string]any {
				switch c.tr {
				case "a2a":
					return map[string]any{"url": "http://" + silent(c.t)}
				case "sql":
					return c.postgres(silent(c.t))
				}
				return c.mcp(&testmcp.Options{HangHandshake: true})
			},
			does: "Start-up ends at the handshake deadline (a margin before `ai.startup_timeout_ms`): required, it fails naming the server; optional, the others serve and its tools are refused while its supervisor retries.",
		},
		{
			id: "handshake-slow", what: "The handshake is slow but inside the budget (300 ms of 2 s)",
			on: mcpTransports, req: ready, opt: ready,
			dep: func(c *cell) map[string]any {
				return c.mcp(&testmcp.Options{HandshakeDelay: 300 * time.Millisecond})
			},
			then: func(c *cell) { c.ok("x.add", map[string]any{"a": 1, "b": 2}) },
			does: "It is waited for; its tools answer.",
		},
		{
			id: "handshake-past-margin", what: "The handshake answers after the per-server margin (1.9 s of 2 s: the margin is a tenth of the budget)",
			on: mcpTransports, req: unreachableReq, opt: unreachableOpt,
			dep: func(c *cell) map[string]any {
				return c.mcp(&testmcp.Options{HandshakeDelay: 1900 * time.Millisecond})
			},
			does: "Treated as a server that hangs: named, within the budget.",
		},
		{
			id: "handshake-slowloris", what: "The server writes its handshake answer one byte every 40 ms (a slow loris)",
			on: mcpTransports, req: unreachableReq, opt: unreachableOpt,
			dep: func(c *cell) map[string]any {
				return c.mcp(&testmcp.Options{Dribble: 40 * time.Millisecond})
			},
			does: "Treated as a server that hangs: the handshake deadline ends it however much has arrived.",
		},
		{
			id: "stream-held", what: "The server answers initialize, then holds the standalone event stream's GET without answering its headers",
			on: []string{"http"}, req: unreachableReq, opt: unreachableOpt,
			dep: func(c *cell) map[string]any {
				return c.mcp(&testmcp.Options{HoldStream: true})
			},
			does: "Treated as a server that hangs: the handshake deadline cuts its requests (the transport waits for that GET as its handshake ends, so that what the server sends next finds the stream open, with no deadline of its own), named, within the budget.",
		},
		{
			id: "command-missing", what: "The command does not exist",
			on: []string{"stdio"}, req: unreachableReq, opt: unreachableOpt,
			dep: func(c *cell) map[string]any {
				return map[string]any{"transport": "stdio", "command": "/nonexistent/heddle-faults-server"}
			},
			does: "Fails at once, naming the command.",
		},
		{
			id: "exits-at-start", what: "The process exits at start with an error on stderr",
			on: []string{"stdio"}, req: unreachableReq, opt: unreachableOpt,
			dep:  func(c *cell) map[string]any { return c.mcp(&testmcp.Options{ExitAtStart: true}) },
			does: "Fails at once; the error quotes the last lines of its stderr.",
		},
		{
			id: "connection-refused", what: "Nothing listens at the address",
			on: append(httpTransports, "a2a", "sql"), req: unreachableReq, opt: unreachableOpt,
			dep: func(c *cell) map[string]any {
				switch c.tr {
				case "a2a":
					return map[string]any{"url": "http://" + closedPort(c.t)}
				case "sql":
					return c.postgres(closedPort(c.t))
				}
				return map[string]any{"transport": c.tr, "url": "http://" + closedPort(c.t) + "/mcp"}
			},
			does: "Fails at once.",
		},
		{
			id: "crash-mid-call", what: "The server's process exits during a call (a destructive tool's)",
			on: mcpTransports, req: ready, opt: ready,
			dep: func(c *cell) map[string]any {
				return c.mcp(&testmcp.Options{CrashAfter: 1, Destructive: []string{"add"}})
			},
			cellsOnly: "its server over HTTP exits at the second call, and the surfaces' processes, which run side by side, would share it",
			then: func(c *cell) {
				c.ok("x.add", map[string]any{"a": 1, "b": 2})
				c.want("x.add", c.args(), diag.ToolUnavailable) // not sent again: it may have run
				if c.http != nil {
					c.http.restart()
				}
				c.eventually("x.add", 10*time.Second)
			},
			does: "The call is refused and not sent again (it may have run); a new process (stdio) or the server back on its address (HTTP) answers the next calls.",
		},
		{
			id: "call-hangs", what: "One call never returns while others go on",
			on: mcpTransports, req: ready, opt: ready,
			dep: func(c *cell) map[string]any {
				m := c.mcp(&testmcp.Options{HangOnCall: []string{"echo"}})
				m["timeout_ms"] = 800
				return m
			},
			then: func(c *cell) {
				var wg sync.WaitGroup
				wg.Go(func() {
					r := c.want("x.echo", map[string]any{"text": "hi"}, diag.TransportTimeout)
					if r.took > 800*time.Millisecond+margin {
						c.t.Errorf("the hanging call was refused after %v, want about timeout_ms 800ms", r.took)
					}
				})
				time.Sleep(100 * time.Millisecond)
				for range 5 {
					c.ok("x.add", map[string]any{"a": 1, "b": 2})
				}
				wg.Wait()
				if got := c.state(); got != "ready" {
					c.t.Errorf("x after a call timed out: %s, want ready", got)
				}
			},
			does: "That call is refused at the server's `timeout_ms`; calls alongside it answer; the server stays ready.",
		},
		{
			id: "restart", what: "The server restarts (a new process; over HTTP a new session on the same address)",
			on: mcpTransports, req: ready, opt: ready,
			dep: func(c *cell) map[string]any { return c.mcp(nil) },
			then: func(c *cell) {
				if c.http != nil {
					c.http.restart()
				} else {
					r := c.ok("x.pid", nil)
					var pid, pgid int
					if _, err := fmt.Sscanf(r.text, "pid %d pgid %d", &pid, &pgid); err != nil {
						c.t.Fatalf("pid %q: %v", r.text, err)
					}
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				if codes := c.eventually("x.add", 10*time.Second); len(codes) > 1 {
					c.t.Errorf("calls refused before the restarted server answered: %v, want at most one", codes)
				}
			},
			does: "At most one call is refused; the next answers from the new process or session.",
		},
		{
			id: "list-fails-at-start", what: "`tools/list` answers an error at start-up",
			on: mcpTransports, req: listReq, opt: listOpt,
			dep:  func(c *cell) map[string]any { return c.mcp(&testmcp.Options{FailList: true}) },
			does: "Treated as a server that cannot be reached; optional, its supervisor lists it again with backoff.",
		},
		{
			id: "crash-while-listing", what: "The server's process exits when asked for its tools at start-up",
			on: mcpTransports, req: listReq, opt: outcome{code: diag.MCPServerUnreachable},
			dep:       func(c *cell) map[string]any { return c.mcp(&testmcp.Options{CrashOnList: true}) },
			cellsOnly: "its server over HTTP is gone after the first listing, which the surfaces' processes would share",
			does:      "Required, start-up fails naming it (it used to start with the server down); optional, it is down as a server whose connection was lost, and its supervisor starts it again.",
		},
		{
			id: "list-fails-later", what: "`tools/list` fails after a `list_changed`",
			on: mcpTransports, req: ready, opt: ready,
			dep:       func(c *cell) map[string]any { return c.mcp(&testmcp.Options{FailListAfter: 1}) },
			cellsOnly: "its server fails every listing after its first, which the surfaces' processes would share",
			then: func(c *cell) {
				c.ok("x.add_tool", map[string]any{"name": "late"})
				c.waitState("down "+string(diag.MCPListFailed), 5*time.Second)
				c.want("x.add", c.args(), diag.ToolUnavailable)
			},
			does: "The server is down from that listing on ([`MCP_LIST_FAILED`](errors.md#MCP_LIST_FAILED) in health) and its tools are refused; the others answer.",
		},
		{
			id: "malformed-answer", what: "A call is answered with a JSON-RPC response whose result is not an object",
			on: mcpTransports, req: ready, opt: ready,
			dep: func(c *cell) map[string]any { return c.mcp(&testmcp.Options{MalformedCalls: true}) },
			then: func(c *cell) {
				c.want("x.add", c.args(), diag.ToolUnavailable)
				c.want("x.add", c.args(), diag.ToolUnavailable)
			},
			does: "Each such call is refused with a code, never sent again; the client library cannot read the answer, so the connection is treated as broken and opened again for the next call. The sibling answers throughout.",
		},
		{
			id: "invalid-json", what: "A call is answered with a line that is not JSON (a response cut off)",
			on: mcpTransports, req: ready, opt: ready,
			dep: func(c *cell) map[string]any { return c.mcp(&testmcp.Options{InvalidJSONCalls: true}) },
			then: func(c *cell) {
				c.want("x.add", c.args(), diag.ToolUnavailable)
			},
			does: "As a malformed answer: the call is refused with a code and the connection opened again.",
		},
		{
			id: "garbage-on-stdout", what: "The server writes a line that is not JSON-RPC on stdout before speaking MCP",
			on: []string{"stdio"}, req: unreachableReq, opt: unreachableOpt,
			dep:  func(c *cell) map[string]any { return c.mcp(&testmcp.Options{GarbageOnStdout: true}) },
			does: "The handshake fails at once, without waiting for the deadline.",
		},
		{
			id: "result-100mb", what: "A call's result is 100 MB",
			on: mcpTransports, req: ready, opt: ready,
			dep: func(c *cell) map[string]any { return c.mcp(nil) },
			then: func(c *cell) {
				peak := heapGrowth(func() {
					c.want("x.big", map[string]any{"bytes": 100 << 20}, diag.ResultTooLarge)
				})
				if peak > 64<<20 {
					c.t.Errorf("the heap grew by %d MiB during the call, want the result never held (under 64 MiB)", peak>>20)
				}
				c.ok("x.add", map[string]any{"a": 1, "b": 2})
			},
			does: "Refused as it is read, never held whole (the process's heap grows by less than 64 MiB during the call); the session survives and the next call answers.",
		},
		{
			id: "tools-100k", what: "The server offers 100,000 tools", slow: true, budget: 30 * time.Second,
			on: mcpTransports, req: ready, opt: ready,
			dep: func(c *cell) map[string]any { return c.mcp(&testmcp.Options{NumTools: 100_000, NoFixedTools: true}) },
			then: func(c *cell) {
				if n := len(c.names()); n != 100_001 {
					c.t.Errorf("a's toolset has %d tools, want 100,001", n)
				}
				c.ok("x.tool_99999", map[string]any{"k": "v"})
			},
			does: "Listed in pages and served; a call of the last answers.",
		},
		{
			id: "cursor-repeats", what: "`tools/list` returns the same `nextCursor` forever",
			on: mcpTransports, req: listReq, opt: listOpt,
			dep:  func(c *cell) map[string]any { return c.mcp(&testmcp.Options{RepeatCursor: true}) },
			does: "The listing stops at the repeated cursor and fails rather than looping.",
		},
		{
			id: "bad-names", what: "Tool names model APIs refuse: a space, a slash, non-ASCII letters, 300 characters",
			on: mcpTransports, req: ready, opt: ready,
			dep: func(c *cell) map[string]any { return c.mcp(&testmcp.Options{BadNames: true}) },
			then: func(c *cell) {
				tools, err := c.ts.Tools(context.Background())
				if err != nil {
					c.t.Fatal(err)
				}
				renamed := map[string]string{}
				for _, tl := range tools {
					if !modelName.MatchString(tl.Name) {
						c.t.Errorf("tool name %q is not one every model API accepts", tl.Name)
					}
					if slices.Contains(testmcp.BadNames, tl.OriginalName) {
						renamed[tl.OriginalName] = tl.Name
					}
				}
				if len(renamed) != len(testmcp.BadNames) {
					c.t.Errorf("renamed %v, want every one of %q", renamed, testmcp.BadNames)
				}
				for orig, name := range renamed {
					if r := c.ok(name, map[string]any{"k": "v"}); !strings.Contains(r.text, `"k"`) {
						c.t.Errorf("call %s (%q): %q", name, orig, clip(r.text))
					}
				}
			},
			does: "Each is renamed to a name every model API accepts, and calls under it reach the tool by its own name.",
		},
		{
			id: "list-changed-storm", what: "The server sends `list_changed` every 15 ms",
			on: mcpTransports, req: ready, opt: ready,
			dep: func(c *cell) map[string]any {
				return c.mcp(&testmcp.Options{ListChangedEvery: 15 * time.Millisecond})
			},
			then: func(c *cell) {
				start := time.Now()
				for range 20 {
					c.ok("x.add", map[string]any{"a": 1, "b": 2})
					_ = c.names()
				}
				if d := time.Since(start); d > 5*time.Second {
					c.t.Errorf("20 calls and listings took %v during the storm", d)
				}
			},
			does: "Nothing is fetched per notification; calls and listings stay fast.",
		},
		{
			id: "schema-10000-deep", what: "A tool's input schema nests 10,000 levels deep",
			on: mcpTransports, req: listReq, opt: listOpt,
			dep: func(c *cell) map[string]any { return c.mcp(&testmcp.Options{DeepSchema: 10_000}) },
			by: map[string][2]outcome{
				// go-sdk's client cannot decode the answer and drops the
				// connection: down as a server whose connection is lost.
				"http": {{fails: true, code: diag.MCPListFailed}, {code: diag.MCPServerUnreachable}},
				"sse":  {{fails: true, code: diag.MCPListFailed}, {code: diag.MCPServerUnreachable}},
			},
			does: "Nothing is decoded past 1,000 levels, so the stack is never at risk. Over stdio heddle's reader refuses that answer and the session survives; over HTTP the client library cannot decode it and drops the connection, which the supervisor opens again.",
		},
		{
			id: "auth-endpoint-down", what: "The auth plugin's token endpoint refuses connections",
			on: []string{"http"},
			dep: func(c *cell) map[string]any {
				return c.pluginAuth("http://" + closedPort(c.t) + "/auth/agent/session")
			},
			does: "Connecting fails with the plugin's coded error; optional, its supervisor retries.",
		},
		{
			id: "auth-endpoint-hangs", what: "The auth plugin's token endpoint accepts and never answers",
			on: []string{"http"},
			dep: func(c *cell) map[string]any {
				return c.pluginAuth("http://" + silent(c.t) + "/auth/agent/session")
			},
			does: "Bounded by the start-up deadline: fails by name within the budget.",
		},
		{
			id: "plugin-crashes", what: "The auth plugin's process exits when asked for credentials",
			on:   []string{"http"},
			dep:  func(c *cell) map[string]any { return c.badPlugin("crash") },
			does: "Connecting fails with a code; the plugin is started again, with backoff, when needed.",
		},
		{
			id: "plugin-hangs", what: "The auth plugin never answers when asked for credentials",
			on:   []string{"http"},
			dep:  func(c *cell) map[string]any { return c.badPlugin("hang") },
			does: "Bounded by the start-up deadline: fails by name within the budget.",
		},
		{
			id: "secret-missing", what: "A credential's secret file is missing",
			on: []string{"stdio", "http"},
			dep: func(c *cell) map[string]any {
				return c.withSecret("${file:" + c.dir + "/missing}")
			},
			does: "A configuration error: start-up fails naming the reference (never a value), whatever `remote_clients` says.",
		},
		{
			id: "secret-empty", what: "A credential's secret file is empty",
			on: []string{"stdio", "http"},
			dep: func(c *cell) map[string]any {
				return c.withSecret("${file:" + c.file("empty", "") + "}")
			},
			does: "A configuration error, as a missing one.",
		},
		{
			id: "secret-rotated", what: "A bearer token's secret file is rotated, and the server accepts only the new token from then on",
			on: httpTransports, req: ready, opt: ready,
			dep: func(c *cell) map[string]any {
				c.token = c.file("token", canary+"-t0ken-1")
				m := c.mcp(nil)
				m["url"] = c.gate(m["url"].(string), canary+"-t0ken-1")
				m["auth"] = map[string]any{"kind": "bearer", "token_ref": "${file:" + c.token + "}"}
				return m
			},
			then: func(c *cell) {
				c.ok("x.add", c.args())
				c.file("token", canary+"-t0ken-2")
				c.accept.Store("Bearer " + canary + "-t0ken-2")
				c.ok("x.add", c.args())
			},
			does: "The first request the server refuses (401) has the secret read again; it changed, so that request is sent once more with the new token and answers. No restart or reload is needed; a 401 with the secret unchanged is the server's answer.",
		},
		{
			id: "dns-fails", what: "The server's host name does not resolve",
			on: append(httpTransports, "a2a"), req: unreachableReq, opt: unreachableOpt,
			cellsOnly: "the name server is failed through the runtime's HTTP transport, which only the library takes",
			dep: func(c *cell) map[string]any {
				c.httpT = noDNS()
				if c.tr == "a2a" {
					return map[string]any{"url": "https://agent.faults.test:8443"}
				}
				return map[string]any{"transport": c.tr, "url": "https://mcp.faults.test:8443/mcp"}
			},
			does: "Fails at once, saying the name does not resolve.",
		},
		{
			id: "tls-fails", what: "TLS fails (`https://` to a server that speaks plain HTTP)",
			on: append(httpTransports, "a2a"), req: unreachableReq, opt: unreachableOpt,
			dep: func(c *cell) map[string]any {
				if c.tr == "a2a" {
					s := startHTTP(c.t, nil)
					return map[string]any{"url": strings.Replace(s.url("http"), "http://", "https://", 1)}
				}
				s := startHTTP(c.t, nil)
				return map[string]any{"transport": c.tr, "url": strings.Replace(s.url(c.tr), "http://", "https://", 1)}
			},
			does: "Fails at once: the TLS handshake is refused.",
		},
		{
			id: "sqlite-missing", what: "An SQLite source's file is missing",
			on: []string{"sql"},
			dep: func(c *cell) map[string]any {
				return map[string]any{"driver": "sqlite", "path": c.dir + "/missing.db"}
			},
			does: "A configuration error: start-up fails whatever `remote_clients` says; the file is not created.",
		},
	}
	// The outcomes shared by a group of rows.
	for _, f := range fs {
		switch f.id {
		case "auth-endpoint-down", "auth-endpoint-hangs", "plugin-crashes", "plugin-hangs":
			f.req, f.opt = failsOrDown(diag.MCPServerUnreachable)
		case "secret-missing":
			f.req, f.opt = failsAlways(diag.SecretUnresolved)
		case "secret-empty":
			f.req, f.opt = failsAlways(diag.SecretEmpty)
		case "sqlite-missing":
			f.req, f.opt = failsAlways(diag.SQLSourceUnreachable)
		}
	}
	return fs
}()

// cellSlots bounds the cells that run at once: they assert deadlines, which
// a machine with more work than cores would make them miss.
var cellSlots = make(chan struct{}, 6)

// TestFaults runs every cell of the matrix: each fault on each transport
// it applies to, under required and optional.
func TestFaults(t *testing.T) {
	eachCell(t, cellSlots, (*cell).run)
}

// eachCell runs do for every cell of the matrix, in parallel, each in a
// subtest <fault>/<transport>/<mode> of t, no more at once than slots
// holds (when it is not nil).
func eachCell(t *testing.T, slots chan struct{}, do func(*cell)) {
	for _, f := range faults {
		t.Run(f.id, func(t *testing.T) {
			if f.slow && !all {
				t.Skip("slow: HEDDLE_FAULTS=all (make faults) runs it")
			}
			for _, tr := range f.on {
				t.Run(tr, func(t *testing.T) {
					for _, mode := range []string{"required", "optional"} {
						t.Run(mode, func(t *testing.T) {
							t.Parallel()
							if slots != nil {
								slots <- struct{}{}
								defer func() { <-slots }()
							}
							do(&cell{t: t, f: f, tr: tr, mode: mode, dir: t.TempDir()})
						})
					}
				})
			}
		})
	}
}

// pluginAuth is x over HTTP, authenticated by the example auth plugin
// against sessionURL.
func (c *cell) pluginAuth(sessionURL string) map[string]any {
	c.plugins = map[string]any{"agent-session": map[string]any{"command": pluginBin, "sha256": pluginSum}}
	m := c.mcp(nil)
	m["auth"] = map[string]any{"kind": "agent-session", "session_url": sessionURL,
		"bootstrap_ref": "${file:" + c.file("bootstrap", canary+"-bootstrap") + "}"}
	return m
}

// badPlugin is x over HTTP, authenticated by the misbehaving plugin in
// mode.
func (c *cell) badPlugin(mode string) map[string]any {
	c.plugins = map[string]any{"bad": map[string]any{"command": badPluginBin, "sha256": badPluginSum}}
	m := c.mcp(nil)
	m["auth"] = map[string]any{"kind": "bad", "mode": mode}
	return m
}

// withSecret is x with a credential from ref: an environment variable of
// a stdio server, a bearer token over HTTP.
func (c *cell) withSecret(ref string) map[string]any {
	m := c.mcp(nil)
	if c.tr == "stdio" {
		m["env"] = map[string]any{"API_TOKEN": ref}
		return m
	}
	m["auth"] = map[string]any{"kind": "bearer", "token_ref": ref}
	return m
}

// noDNS is an HTTP transport whose resolver fails every lookup, as a
// resolver that cannot be reached does: no query leaves the machine.
func noDNS() http.RoundTripper {
	r := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no name server is reachable")
	}}
	d := &net.Dialer{Resolver: r, Timeout: 5 * time.Second}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = d.DialContext
	return t
}

// heapGrowth runs f and returns how far the heap grew above its size
// before, at the most, sampled every 2 ms. Other cells run beside it, so
// the figure is an upper bound of f's own.
func heapGrowth(f func()) uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
		}
	}()
	f()
	close(done)
	<-sampled
	if peak < base {
		return 0
	}
	return peak - base
}

// gate is a front on 127.0.0.1 that passes requests to upstream only with
// the bearer token c.accept holds (at first, token), and answers 401
// otherwise; it returns the front's URL for upstream's.
func (c *cell) gate(upstream, token string) string {
	u, err := url.Parse(upstream)
	if err != nil {
		c.t.Fatal(err)
	}
	c.accept.Store("Bearer " + token)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != c.accept.Load() {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	c.t.Cleanup(func() {
		front.CloseClientConnections()
		front.Close()
	})
	return front.URL + u.Path
}

// canary starts every secret the cells give heddle: no output of heddle's
// may hold it.
const canary = "CANARY-5f3a"

// postgres is x as a PostgreSQL source at addr, its DSN (which holds a
// password) in a secret file.
func (c *cell) postgres(addr string) map[string]any {
	dsn := c.file("dsn", "postgres://heddle:"+canary+"-pw@"+addr+"/warehouse?sslmode=disable")
	return map[string]any{"driver": "postgres", "dsn_ref": "${file:" + dsn + "}"}
}
