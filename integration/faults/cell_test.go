package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/syncbuf"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// defaultBudget is the cells' ai.startup_timeout_ms.
const defaultBudget = 2000 * time.Millisecond

// margin is how much longer than its budget start-up may take, and how
// much longer than its deadline a call.
const margin = time.Second

// cell is one fault on one transport under one ai.remote_clients.
type cell struct {
	t    *testing.T
	f    *fault
	tr   string // stdio, http, sse, a2a, sql
	mode string // required, optional
	dir  string

	http    *httpServer       // the faulty server's process, over HTTP
	token   string            // a secret file the dependency reads
	accept  atomic.Value      // the Authorization a gate in front of x accepts
	httpT   http.RoundTripper // the runtime's HTTP transport, when the fault needs one
	plugins map[string]any    // ai.auth_plugins the dependency needs

	rt *runtime.Runtime
	ts *runtime.Toolset
}

// budget is the cell's start-up budget.
func (c *cell) budget() time.Duration {
	if c.f.budget > 0 {
		return c.f.budget
	}
	return defaultBudget
}

// mcp is the entry of the faulty MCP server x on the cell's transport: the
// test server with opts, over stdio or in a process of its own over HTTP.
func (c *cell) mcp(opts *testmcp.Options) map[string]any {
	if c.tr == "stdio" {
		return map[string]any{"transport": "stdio", "command": testmcpBin, "args": opts.Args()}
	}
	c.http = startHTTP(c.t, opts)
	return map[string]any{"transport": c.tr, "url": c.http.url(c.tr)}
}

// file writes a file in the cell's directory and returns its path.
func (c *cell) file(name, data string) string {
	c.t.Helper()
	p := filepath.Join(c.dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// api is the cell's api.yaml: the healthy sibling good, and x.
func (c *cell) api(dep map[string]any) string {
	j := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			c.t.Fatal(err)
		}
		return string(b)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ai:\n  startup_timeout_ms: %d\n  remote_clients: %s\n", c.budget().Milliseconds(), c.mode)
	fmt.Fprintf(&b, "  mcp_servers:\n    good: %s\n", j(map[string]any{"transport": "stdio", "command": testmcpBin}))
	switch c.tr {
	case "a2a":
		fmt.Fprintf(&b, "  a2a_agents:\n    x: %s\n", j(dep))
	case "sql":
		fmt.Fprintf(&b, "  sql_sources:\n    x: %s\n", j(dep))
	default:
		fmt.Fprintf(&b, "    x: %s\n", j(dep))
	}
	if c.plugins != nil {
		fmt.Fprintf(&b, "  auth_plugins: %s\n", j(c.plugins))
	}
	return b.String()
}

// agent is the agent.yaml of a: good's echo and x.
func (c *cell) agent() string {
	x := "{kind: mcp, server: x}"
	switch c.tr {
	case "a2a":
		x = "{kind: a2a, agent: x}"
	case "sql":
		x = "{kind: sql, source: x, query: true}"
	}
	return "capabilities:\n  - {kind: mcp, server: good, include: [echo]}\n  - " + x + "\npolicies: {approval: allow}\n"
}

// run opens the cell's runtime and asserts start-up's outcome, then the
// fault's own; it closes the runtime and asserts that closing is prompt.
func (c *cell) run() {
	t := c.t
	dep := c.f.dep(c)
	p, err := plantest.Compile(c.api(dep), map[string]string{"a": c.agent()})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	want := c.f.outcome(c.mode, c.tr)
	var log syncbuf.Buffer
	start := time.Now()
	rt, err := runtime.Open(context.Background(), p, runtime.Options{
		Logger:        slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		HTTPTransport: c.httpT,
	})
	if took := time.Since(start); took > c.budget()+margin {
		t.Errorf("start-up took %v, want within the budget %v and %v; the runtime's log:\n%s", took.Round(time.Millisecond), c.budget(), margin, log.String())
	}
	if want.fails {
		if err == nil {
			_ = rt.Close()
			t.Fatalf("start-up succeeded, want it to fail with %s", want.code)
		}
		if !diag.Has(err, want.code) || !strings.Contains(err.Error(), "x") || strings.Contains(err.Error(), "good") {
			t.Errorf("start-up: %v; want %s naming x alone", err, want.code)
		}
		c.noSecret("start-up's error", err.Error())
		return
	}
	if err != nil {
		t.Fatalf("start-up: %v; want it to start (x %s)", err, orReady(want.code))
	}
	c.rt = rt
	t.Cleanup(func() {
		start := time.Now()
		_ = rt.Close()
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Close took %v", d)
		}
	})
	if c.ts, err = rt.Toolset("a"); err != nil {
		t.Fatal(err)
	}
	if got := c.state(); got != orReady(want.code) {
		t.Errorf("x after start-up: %s, want %s", got, orReady(want.code))
	}
	c.sibling()
	if want.code != "" {
		c.want(c.tool(), c.args(), diag.ToolUnavailable)
	}
	if c.f.then != nil {
		c.f.then(c)
	}
	c.sibling()
}

func orReady(code diag.Code) string {
	if code == "" {
		return "ready"
	}
	return "down " + string(code)
}

// tool is the name of one of x's tools.
func (c *cell) tool() string {
	switch c.tr {
	case "a2a":
		return "x"
	case "sql":
		return "x.query"
	}
	return "x.add"
}

// args are arguments of x's tool that tool accepts.
func (c *cell) args() map[string]any {
	switch c.tr {
	case "a2a":
		return map[string]any{"message": "hello"}
	case "sql":
		return map[string]any{"sql": "SELECT 1"}
	}
	return map[string]any{"a": 1, "b": 2}
}

// state is x's state in the health report, with its code.
func (c *cell) state() string {
	for _, d := range c.rt.Health().Dependencies {
		if d.Name == "x" {
			if d.State == driver.StateReady {
				return "ready"
			}
			return string(d.State) + " " + string(d.Code)
		}
	}
	return "missing"
}

// sibling asserts that the healthy server's tool answers.
func (c *cell) sibling() {
	c.t.Helper()
	if r := c.call("good.echo", map[string]any{"text": "sibling"}); r.code != "" || !strings.Contains(r.text, "sibling") {
		c.t.Errorf("the healthy sibling's echo: %+v", r)
	}
}

// result is what a call came to: its code ("" when it answered) and text.
type result struct {
	code diag.Code
	text string
	took time.Duration
}

// call calls a tool of agent a, with a deadline far past every fault's,
// and fails the test on a failure that carries no code.
func (c *cell) call(name string, args map[string]any) result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	res, err := c.ts.Call(ctx, name, args)
	r := result{took: time.Since(start)}
	switch {
	case err != nil:
		r.code, r.text = diag.CodeOf(err), err.Error()
		if r.code == "" {
			c.t.Errorf("call %s: an error without a code: %v", name, err)
			r.code = "UNCODED"
		}
	case res.IsError:
		r.code, r.text = codeOf(res), text(res)
		if r.code == "" {
			r.code = "TOOL_ERROR" // the tool's own answer
		}
	default:
		r.text = text(res)
	}
	c.noSecret("call "+name, r.text)
	return r
}

// want asserts that a call of name with args fails with code.
func (c *cell) want(name string, args map[string]any, code diag.Code) result {
	c.t.Helper()
	r := c.call(name, args)
	if r.code != code {
		c.t.Errorf("call %s: %s %q, want %s", name, orOK(r.code), clip(r.text), code)
	}
	return r
}

// ok asserts that a call of name answers.
func (c *cell) ok(name string, args map[string]any) result {
	c.t.Helper()
	r := c.call(name, args)
	if r.code != "" {
		c.t.Errorf("call %s: %s %q, want an answer", name, r.code, clip(r.text))
	}
	return r
}

// eventually calls name until it answers, for up to d, and returns the
// codes of the calls that did not.
func (c *cell) eventually(name string, d time.Duration) []diag.Code {
	c.t.Helper()
	var codes []diag.Code
	end := time.Now().Add(d)
	for {
		r := c.call(name, map[string]any{"a": 1, "b": 2})
		if r.code == "" {
			return codes
		}
		codes = append(codes, r.code)
		if time.Now().After(end) {
			c.t.Fatalf("call %s did not answer within %v: %d calls refused, the last %s %q", name, d, len(codes), r.code, clip(r.text))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitState waits up to d for x's state to be want.
func (c *cell) waitState(want string, d time.Duration) {
	c.t.Helper()
	end := time.Now().Add(d)
	for {
		_, _ = c.ts.Tools(context.Background())
		got := c.state()
		if got == want {
			return
		}
		if time.Now().After(end) {
			c.t.Fatalf("x is %s after %v, want %s", got, d, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func orOK(code diag.Code) string {
	if code == "" {
		return "answered"
	}
	return string(code)
}

func codeOf(res *mcp.CallToolResult) diag.Code {
	if s, ok := res.Meta["code"].(string); ok {
		return diag.Code(s)
	}
	return ""
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// modelName is what every model API accepts as a tool name.
var modelName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// names are the tools' names in a's toolset.
func (c *cell) names() []string {
	tools, err := c.ts.Tools(context.Background())
	if err != nil {
		c.t.Fatalf("Tools: %v", err)
	}
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}
