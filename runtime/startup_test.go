package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
)

// TestStartupOneDeadlineFiftyServers opens 49 healthy stdio servers and one
// whose handshake hangs, under one 3 s start-up deadline. Required, start-up
// fails in time naming only the hanging server, and every child is gone
// afterwards; optional, start-up succeeds and the hanging server's tools
// answer TOOL_UNAVAILABLE.
func TestStartupOneDeadlineFiftyServers(t *testing.T) {
	// Not parallel: the elapsed-time bound must not compete with other
	// tests for the CPU.
	const (
		healthy   = 49
		budgetMS  = 3000
		overshoot = 1000 * time.Millisecond
	)
	for _, required := range []bool{true, false} {
		t.Run(fmt.Sprintf("required=%v", required), func(t *testing.T) {
			// A marker argument finds this subtest's children in /proc.
			marker := fmt.Sprintf("--name=fifty-%d", rand.Uint64())
			var api, agent strings.Builder
			fmt.Fprintf(&api, "ai:\n  startup_timeout_ms: %d\n  mcp_servers:\n", budgetMS)
			agent.WriteString("capabilities:\n")
			for i := range healthy {
				fmt.Fprintf(&api, "    s%02d: {transport: stdio, command: $TESTMCP, args: [%q]}\n", i, marker)
				fmt.Fprintf(&agent, "  - {kind: mcp, server: s%02d}\n", i)
			}
			fmt.Fprintf(&api, "    hang: {transport: stdio, command: $TESTMCP, args: [%q, --hang-handshake], required: %v}\n", marker, required)
			agent.WriteString("  - {kind: mcp, server: hang}\n")
			p := compilePlan(t, api.String(), map[string]string{"x": agent.String()})

			w := watchProcs(marker)
			start := time.Now()
			rt, err := runtime.Open(context.Background(), p, runtime.Options{})
			elapsed := time.Since(start)
			limit := budgetMS*time.Millisecond + overshoot
			if !required {
				// Tolerating the hang, Open goes on to list the 49 others
				// after the handshake cut-off. (It must not wait for the
				// supervisor's first reconnect of the hanging server, which
				// took another whole budget.)
				limit += overshoot / 2
			}
			if elapsed > limit {
				t.Errorf("Open took %v, want under %v", elapsed, limit)
			}

			if required {
				seen := w.Stop()
				if err == nil {
					rt.Close()
					t.Fatal("Open succeeded with a required server hanging")
				}
				var se *runtime.StartupError
				if !errors.As(err, &se) {
					t.Fatalf("err = %T %v, want *runtime.StartupError", err, err)
				}
				if len(se.Failures) != 1 || se.Failures[0].Name != "hang" || !diag.Has(se.Failures[0].Err, diag.MCPServerUnreachable) {
					for _, f := range se.Failures {
						t.Logf("failure: %s %s", f.Name, diag.CodeOf(f.Err))
					}
					t.Fatalf("failures = %d, want exactly hang with MCP_SERVER_UNREACHABLE", len(se.Failures))
				}
				if !diag.Has(err, diag.MCPServerUnreachable) {
					t.Errorf("diag.Has(err, MCP_SERVER_UNREACHABLE) = false")
				}
				if len(seen) != healthy+1 {
					t.Errorf("saw %d children during Open, want %d", len(seen), healthy+1)
				}
				// Open has returned: every child must already be gone (a
				// short grace covers the kernel's bookkeeping only).
				waitGone(t, 500*time.Millisecond, seen...)
				return
			}

			if err != nil {
				w.Stop()
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { _ = rt.Close() })
			if got, want := rt.Unavailable(), map[string]diag.Code{"hang": diag.MCPServerUnreachable}; !maps.Equal(got, want) {
				t.Errorf("Unavailable() = %v, want %v", got, want)
			}
			ts := toolsetOf(t, rt, "x")
			// The hanging server's tools were never listed; its qualified
			// and dotted names answer TOOL_UNAVAILABLE.
			wantRefusal(t, ts, "hang__echo", map[string]any{"text": "hi"}, diag.ToolUnavailable)
			wantRefusal(t, ts, "hang.echo", map[string]any{"text": "hi"}, diag.ToolUnavailable)
			// The others work, and promptly: the supervisor's reconnect
			// attempts on the hanging server do not hold them up.
			for _, name := range []string{"s00__echo", "s48__echo"} {
				start := time.Now()
				if res := mustCall(t, ts, name, map[string]any{"text": "hi"}); text(res) != "hi" {
					t.Errorf("%s = %q", name, text(res))
				}
				if d := time.Since(start); d > time.Second {
					t.Errorf("%s took %v while another server is reconnecting", name, d)
				}
			}
			tools, err := ts.Tools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range tools {
				if tl.Server == "hang" {
					t.Errorf("tool %s of the hanging server is listed", tl.Name)
				}
			}
			seen := w.Stop()
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			waitGone(t, 2*time.Second, seen...)
		})
	}
}

// TestStartupRequiredVsOptional checks ai.remote_clients against the
// per-server required: override, and how tolerated failures are logged:
// code and name at WARN, the transport's reason only at DEBUG.
func TestStartupRequiredVsOptional(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		remoteClients string
		required      string // the down server's required: setting, "" for none
		wantOpen      bool
	}{
		{"optional", "optional", "", true},
		{"optional/server-required", "optional", "true", false},
		{"required", "required", "", false},
		{"required/server-optional", "required", "false", true},
		{"default-is-required", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := "ai:\n  startup_timeout_ms: 5000\n"
			if tc.remoteClients != "" {
				api += "  remote_clients: " + tc.remoteClients + "\n"
			}
			api += "  mcp_servers:\n    up: {transport: stdio, command: $TESTMCP}\n" +
				"    down: {transport: stdio, command: /nonexistent/heddle-testmcp"
			if tc.required != "" {
				api += ", required: " + tc.required
			}
			api += "}\n"
			p := compilePlan(t, api, map[string]string{"x": `capabilities: [{kind: mcp, server: up}, {kind: mcp, server: down}]`})
			logs := newLogCapture()
			rt, err := runtime.Open(context.Background(), p, runtime.Options{Logger: slog.New(logs)})
			if !tc.wantOpen {
				if err == nil {
					rt.Close()
					t.Fatal("Open succeeded")
				}
				var se *runtime.StartupError
				if !errors.As(err, &se) || len(se.Failures) != 1 || se.Failures[0].Name != "down" ||
					!diag.Has(se.Failures[0].Err, diag.MCPServerUnreachable) {
					t.Fatalf("err = %v, want one MCP_SERVER_UNREACHABLE failure naming down", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer rt.Close()
			if got, want := rt.Unavailable(), map[string]diag.Code{"down": diag.MCPServerUnreachable}; !maps.Equal(got, want) {
				t.Errorf("Unavailable() = %v, want %v", got, want)
			}
			ts := toolsetOf(t, rt, "x")
			mustCall(t, ts, "echo", map[string]any{"text": "hi"}) // bare: down offers nothing yet
			wantRefusal(t, ts, "down__echo", map[string]any{"text": "hi"}, diag.ToolUnavailable)

			// WARN: the server, the code and the coded message — heddle's own
			// words, which name the command and say what to do. DEBUG: the
			// reason, the underlying error's text, which no WARN repeats.
			var warned, debugged bool
			for _, r := range logs.Records() {
				if r.Attrs["server"] != "down" {
					continue
				}
				if r.Level >= slog.LevelWarn {
					for k, v := range r.Attrs {
						if k != "server" && k != "code" && k != "error" {
							t.Errorf("%v record %q has attribute %s=%q; only server, code and error belong at WARN", r.Level, r.Msg, k, v)
						}
					}
					if r.Attrs["code"] == string(diag.MCPServerUnreachable) &&
						strings.HasPrefix(r.Attrs["error"], "MCP_SERVER_UNREACHABLE: server down: command /nonexistent/heddle-testmcp not found") {
						warned = true
					}
				}
				if r.Level == slog.LevelDebug && r.Attrs["reason"] != "" {
					debugged = true
				}
			}
			if !warned {
				t.Error("no WARN record with server=down, code=MCP_SERVER_UNREACHABLE and the message naming the command")
			}
			if !debugged {
				t.Error("no DEBUG record with server=down and the reason")
			}
			// Nothing at WARN or above, from any logger, repeats the reason.
			for _, r := range logs.Records() {
				if r.Level < slog.LevelWarn {
					continue
				}
				all := r.Msg + " " + strings.Join(slices.Collect(maps.Values(r.Attrs)), " ")
				if strings.Contains(all, "no such file") || strings.Contains(all, "fork/exec") {
					t.Errorf("%v record repeats the transport reason: %q %v", r.Level, r.Msg, r.Attrs)
				}
			}
		})
	}
}

// TestStartupFilterUnmatched fails start-up when a grant's pattern matches
// none of an opened server's tools, whether include or exclude.
func TestStartupFilterUnmatched(t *testing.T) {
	t.Parallel()
	for _, grant := range []string{
		`{kind: mcp, server: a, include: ["nomatch_*"]}`,
		`{kind: mcp, server: a, include: ["echo", "nomatch_*"]}`,
		`{kind: mcp, server: a, exclude: ["nomatch"]}`,
	} {
		t.Run(grant, func(t *testing.T) {
			t.Parallel()
			p := compilePlan(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP}
`, map[string]string{"x": "capabilities: [" + grant + "]"})
			rt, err := runtime.Open(context.Background(), p, runtime.Options{})
			if err == nil {
				rt.Close()
				t.Fatal("Open succeeded")
			}
			if !diag.Has(err, diag.MCPFilterUnmatched) {
				t.Fatalf("err = %v, want MCP_FILTER_UNMATCHED", err)
			}
		})
	}
}

// TestStartupOverrideUnmatched fails start-up when a server's
// classification override — a tools: key or an entry of its lists — matches
// none of its tools, and names every one that does not; overrides that
// match start.
func TestStartupOverrideUnmatched(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ overrides, want string }{
		{`tools: {ehco: {destructive: true}}`, `tools "ehco"`},
		{`tools: {"del_*": {destructive: true}, echo: {read_only: true}}`, `tools "del_*"`},
		{`destructive_tools: [remove_tool, drop_table]`, `destructive_tools "drop_table"`},
		{`read_only_tools: ["get_*"], idempotent_tools: [pid]`, `read_only_tools "get_*"`},
		{`tools: {"ec*": {destructive: true}}, destructive_tools: [add], read_only_tools: [echo], idempotent_tools: ["*"]`, ""},
	} {
		t.Run(tc.overrides, func(t *testing.T) {
			t.Parallel()
			p := compilePlan(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, `+tc.overrides+`}
`, map[string]string{"x": "capabilities: [{kind: mcp, server: a}]"})
			rt, err := runtime.Open(context.Background(), p, runtime.Options{})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("overrides that match: %v", err)
				}
				rt.Close()
				return
			}
			if err == nil {
				rt.Close()
				t.Fatal("Open succeeded")
			}
			if !diag.Has(err, diag.MCPFilterUnmatched) || !strings.Contains(err.Error(), "override "+tc.want) {
				t.Fatalf("err = %v, want MCP_FILTER_UNMATCHED naming override %s", err, tc.want)
			}
		})
	}
}

// TestFilterOfLateOptionalServer: an optional server that never connected
// does not fail its filters at start-up; once it comes up (over HTTP, on a
// port chosen in advance) its tools appear.
func TestFilterOfLateOptionalServer(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	rt := openWith(t, fmt.Sprintf(`
ai:
  startup_timeout_ms: 3000
  remote_clients: optional
  mcp_servers:
    late: {url: "http://127.0.0.1:%d/mcp"}
    here: {transport: stdio, command: $TESTMCP}
`, port), map[string]string{"x": `capabilities: [{kind: mcp, server: late, include: ["late_*"]}, {kind: mcp, server: here, include: [echo]}]`}, runtime.Options{})
	if got := rt.Unavailable(); got["late"] != diag.MCPServerUnreachable {
		t.Fatalf("Unavailable() = %v, want late", got)
	}
	ts := toolsetOf(t, rt, "x")
	if got := toolNames(t, ts); !slices.Equal(got, []string{"echo"}) {
		t.Fatalf("tools = %v, want [echo]", got)
	}
	wantRefusal(t, ts, "late__late_one", nil, diag.ToolUnavailable)

	startHTTPServer(t, port, "--tools", "late_one,late_two,other")
	eventually(t, 15*time.Second, "late server's tools listed", func() bool {
		return slices.Equal(toolNames(t, ts), []string{"echo", "late_one", "late_two"})
	})
	if len(rt.Unavailable()) != 0 {
		t.Errorf("Unavailable() = %v after the server came up", rt.Unavailable())
	}
	res := mustCall(t, ts, "late_one", map[string]any{"k": "v"})
	if got := structured(t, res)["k"]; got != "v" {
		t.Errorf("late_one echoed %v", got)
	}
}

// TestGarbageOnStdout: a stdio server that writes a non-JSON line before
// serving is a coded start-up failure, with no hang and no panic.
func TestGarbageOnStdout(t *testing.T) {
	t.Parallel()
	p := compilePlan(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    g: {transport: stdio, command: $TESTMCP, args: [--garbage-on-stdout]}
`, map[string]string{"x": `capabilities: [{kind: mcp, server: g}]`})
	start := time.Now()
	rt, err := runtime.Open(context.Background(), p, runtime.Options{})
	if err == nil {
		rt.Close()
		t.Fatal("Open succeeded")
	}
	if !diag.Has(err, diag.MCPServerUnreachable) {
		t.Fatalf("err = %v, want MCP_SERVER_UNREACHABLE", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("Open took %v: the garbage line should fail the handshake, not wait for the deadline", d)
	}
}

// TestOpenWithNoKinds: a runtime whose program links no kinds says so, and
// how to link them, rather than only naming the kind it lacks.
func TestOpenWithNoKinds(t *testing.T) {
	p := compilePlan(t, "ai:\n  mcp_servers:\n    s: {transport: stdio, command: $TESTMCP}\n", map[string]string{"x": `capabilities: [{kind: mcp, server: s}]`})
	_, err := runtime.Open(context.Background(), p, runtime.Options{Kinds: runtime.NewKindSet(nil)})
	if !diag.Has(err, diag.CapabilityKindUnknown) || !strings.Contains(err.Error(), "links no kinds") || !strings.Contains(err.Error(), "heddle/builtin") {
		t.Fatalf("Open = %v; want CAPABILITY_KIND_UNKNOWN saying no kinds are linked and how to link them", err)
	}
}
