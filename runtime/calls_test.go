package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCallDeadlines: the transport's timeout_ms becomes a TRANSPORT_TIMEOUT
// refusal, the supervisor's tool_timeout_ms a TOOL_TIMEOUT error, both
// promptly; a caller's cancellation returns at once with ctx.Err() while
// other calls on the same session go on; calls do not queue behind each
// other.
func TestCallDeadlines(t *testing.T) {
	t.Parallel()

	t.Run("transport", func(t *testing.T) {
		t.Parallel()
		rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, timeout_ms: 200}
`, map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`}, runtime.Options{})
		ts := toolsetOf(t, rt, "x")
		start := time.Now()
		wantRefusal(t, ts, "sleep", map[string]any{"ms": 2000}, diag.TransportTimeout)
		if d := time.Since(start); d > time.Second {
			t.Errorf("TRANSPORT_TIMEOUT after %v, want about 200ms", d)
		}
		mustCall(t, ts, "echo", map[string]any{"text": "still fine"})
	})

	t.Run("supervisor", func(t *testing.T) {
		t.Parallel()
		rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, timeout_ms: 5000}
`, map[string]string{"x": `
capabilities: [{kind: mcp, server: a}]
policies: {tool_timeout_ms: 200}
`}, runtime.Options{})
		ts := toolsetOf(t, rt, "x")
		start := time.Now()
		res, err := ts.Call(context.Background(), "sleep", map[string]any{"ms": 2000})
		if !diag.Has(err, diag.ToolTimeout) {
			t.Fatalf("sleep = %v, %v; want a TOOL_TIMEOUT error", res, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("TOOL_TIMEOUT after %v, want about 200ms", d)
		}
		mustCall(t, ts, "echo", map[string]any{"text": "still fine"})
	})

	t.Run("cancel-and-concurrency", func(t *testing.T) {
		t.Parallel()
		// The call to be cancelled goes to hang, a tool that answers
		// nothing until the call is cancelled. The server writes "hanging
		// tool call" to its stderr, which the runtime logs at DEBUG, once
		// the call has reached it: then it is cancelled.
		logs := newLogCapture()
		rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, timeout_ms: 5000, args: [--tools, hang, --hang-on-call, hang]}
`, map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`}, runtime.Options{Logger: slog.New(logs)})
		ts := toolsetOf(t, rt, "x")
		hanging := logs.Await(func(r logRecord) bool {
			return r.Attrs["server"] == "a" && strings.Contains(r.Attrs["line"], `msg="hanging tool call"`)
		})

		ctx, cancel := context.WithCancel(context.Background())
		type outcome struct {
			res *mcp.CallToolResult
			err error
			at  time.Duration
		}
		start := time.Now()
		cancelled := make(chan outcome, 1)
		go func() {
			res, err := ts.Call(ctx, "hang", map[string]any{})
			cancelled <- outcome{res, err, time.Since(start)}
		}()
		// Five 300 ms calls at once on the same session: no lock, so they
		// finish together.
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				res, err := ts.Call(context.Background(), "sleep", map[string]any{"ms": 300})
				if err != nil || res.IsError {
					t.Errorf("concurrent sleep: %v %v", res, err)
				}
			})
		}
		select {
		case <-hanging: // the call is in flight at the server
		case o := <-cancelled:
			t.Fatalf("hang returned before it was cancelled: %v, %v", o.res, o.err)
		case <-time.After(10 * time.Second):
			t.Fatal("the call to hang did not reach the server within 10s")
		}
		cancelAt := time.Since(start)
		cancel()
		o := <-cancelled
		if !errors.Is(o.err, context.Canceled) {
			t.Errorf("cancelled call = %v, %v; want context.Canceled", o.res, o.err)
		}
		if lag := o.at - cancelAt; lag > 200*time.Millisecond {
			t.Errorf("cancelled call returned %v after its context ended", lag)
		}
		wg.Wait()
		if d := time.Since(start); d > 1200*time.Millisecond {
			t.Errorf("five concurrent 300ms calls took %v", d)
		}
	})
}

// modelName is what every model API accepts as a tool name.
var modelName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// TestToolNames: names two servers share are qualified (server__tool);
// unique ones stay bare; other characters become _; long names are cut to
// 64 with a hash and stay callable; qualified and dotted forms are
// accepted.
func TestToolNames(t *testing.T) {
	t.Parallel()
	long63 := "long_" + strings.Repeat("y", 58) // a__ + 63 > 64
	long70 := "solo_" + strings.Repeat("z", 65)
	rt := openWith(t, fmt.Sprintf(`
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, args: [--tools, "only_a,weird.name,%s,%s"]}
    b: {transport: stdio, command: $TESTMCP, args: [--tools, "only_b,%s"]}
`, long63, long70, long63), map[string]string{"x": `capabilities: [{kind: mcp, server: a}, {kind: mcp, server: b}]`}, runtime.Options{})
	ts := toolsetOf(t, rt, "x")
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]runtime.Tool{}
	for _, tl := range tools {
		if !modelName.MatchString(tl.Name) {
			t.Errorf("name %q is not a valid model tool name", tl.Name)
		}
		if _, dup := byName[tl.Name]; dup {
			t.Errorf("name %q twice", tl.Name)
		}
		byName[tl.Name] = tl
	}
	want := map[string][2]string{ // name → server, original
		"a__echo":    {"a", "echo"},
		"b__echo":    {"b", "echo"},
		"a__pid":     {"a", "pid"},
		"b__pid":     {"b", "pid"},
		"only_a":     {"a", "only_a"},
		"only_b":     {"b", "only_b"},
		"weird_name": {"a", "weird.name"},
	}
	for name, w := range want {
		tl, ok := byName[name]
		if !ok {
			t.Errorf("no tool %q in %v", name, toolNames(t, ts))
			continue
		}
		if tl.Server != w[0] || tl.OriginalName != w[1] {
			t.Errorf("%s: server %s original %s, want %s %s", name, tl.Server, tl.OriginalName, w[0], w[1])
		}
	}
	// The long ones: cut to exactly 64, one per server for the shared name,
	// one bare for the unique one.
	var cut []runtime.Tool
	for _, tl := range tools {
		if tl.OriginalName == long63 || tl.OriginalName == long70 {
			cut = append(cut, tl)
		}
	}
	if len(cut) != 3 {
		t.Fatalf("long tools = %v, want 3", cut)
	}
	for _, tl := range cut {
		if len(tl.Name) != 64 {
			t.Errorf("%s (from %s.%s) has %d characters, want 64", tl.Name, tl.Server, tl.OriginalName, len(tl.Name))
		}
		if tl.OriginalName == long63 && !strings.HasPrefix(tl.Name, tl.Server+"__long_") {
			t.Errorf("%s: want the qualified form cut", tl.Name)
		}
		res := mustCall(t, ts, tl.Name, map[string]any{"via": tl.Name})
		if got := structured(t, res)["via"]; got != tl.Name {
			t.Errorf("%s echoed %v", tl.Name, got)
		}
	}

	// Every accepted form reaches the right server.
	pidA := intField(t, mustCall(t, ts, "a__pid", nil), "pid")
	pidB := intField(t, mustCall(t, ts, "b__pid", nil), "pid")
	if pidA == pidB {
		t.Fatalf("a and b share pid %d", pidA)
	}
	for name, want := range map[string]int{"a.pid": pidA, "b.pid": pidB} {
		if got := intField(t, mustCall(t, ts, name, nil), "pid"); got != want {
			t.Errorf("%s answered from pid %d, want %d", name, got, want)
		}
	}
	for _, name := range []string{"weird_name", "a__weird_name", "a.weird.name"} {
		res := mustCall(t, ts, name, map[string]any{"via": name})
		if got := structured(t, res)["via"]; got != name {
			t.Errorf("%s echoed %v", name, got)
		}
	}
	// A bare name two servers share names neither.
	wantRefusal(t, ts, "pid", nil, diag.ToolUnknown)
	wantRefusal(t, ts, "c__pid", nil, diag.ToolUnknown)
}

// TestToolListPaging: a server listing 4 tools per page has all 25 listed.
func TestToolListPaging(t *testing.T) {
	t.Parallel()
	rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, args: [--no-fixed-tools, --num-tools, "25", --page-size, "4"]}
`, map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`}, runtime.Options{})
	var want []string
	for i := range 25 {
		want = append(want, fmt.Sprintf("tool_%03d", i))
	}
	if got := toolNames(t, toolsetOf(t, rt, "x")); !slices.Equal(got, want) {
		t.Fatalf("tools = %v (%d), want tool_000…tool_024", got, len(got))
	}
}

// TestCallResults: content kinds survive (image, structured); a result over
// max_result_bytes is cut below it and ends with a note; a tool's own
// failure is IsError without a code.
func TestCallResults(t *testing.T) {
	t.Parallel()
	const maxBytes = 4096
	rt := openWith(t, fmt.Sprintf(`
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, max_result_bytes: %d}
`, maxBytes), map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`}, runtime.Options{})
	ts := toolsetOf(t, rt, "x")

	t.Run("image", func(t *testing.T) {
		res := mustCall(t, ts, "image", nil)
		if len(res.Content) != 2 {
			t.Fatalf("content = %d parts, want image and text", len(res.Content))
		}
		img, ok := res.Content[0].(*mcp.ImageContent)
		if !ok || img.MIMEType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG")) {
			t.Fatalf("content[0] = %#v, want a PNG image", res.Content[0])
		}
		if _, ok := res.Content[1].(*mcp.TextContent); !ok {
			t.Errorf("content[1] = %T, want text", res.Content[1])
		}
	})
	t.Run("structured", func(t *testing.T) {
		res := mustCall(t, ts, "add", map[string]any{"a": 2, "b": 3})
		if got := structured(t, res)["sum"]; got != 5.0 {
			t.Fatalf("sum = %v, want 5", got)
		}
	})
	t.Run("capped", func(t *testing.T) {
		res := mustCall(t, ts, "big", map[string]any{"bytes": 100_000})
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > maxBytes {
			t.Errorf("capped result is %d bytes of JSON, want at most %d", len(b), maxBytes)
		}
		if runtime.RefusalCode(res) != "" {
			t.Errorf("capped result has code %s", runtime.RefusalCode(res))
		}
		if len(res.Content) < 2 {
			t.Fatalf("content = %d parts, want the cut text and a note", len(res.Content))
		}
		first, ok := res.Content[0].(*mcp.TextContent)
		if !ok || first.Text == "" || strings.Trim(first.Text, "x") != "" || len(first.Text) >= 100_000 {
			t.Errorf("content[0] is not a cut of the text")
		}
		note, ok := res.Content[len(res.Content)-1].(*mcp.TextContent)
		if !ok || note.Text == "" || strings.Trim(note.Text, "x") == "" {
			t.Errorf("the last part is not a note: %#v", res.Content[len(res.Content)-1])
		}
	})
	t.Run("small-untouched", func(t *testing.T) {
		res := mustCall(t, ts, "big", map[string]any{"bytes": 100})
		if len(res.Content) != 1 || text(res) != strings.Repeat("x", 100) {
			t.Errorf("a result under the cap was changed: %q", text(res))
		}
	})
	t.Run("tool-error", func(t *testing.T) {
		res, err := ts.Call(context.Background(), "fail", map[string]any{"message": "boom"})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || runtime.RefusalCode(res) != "" || !strings.Contains(text(res), "boom") {
			t.Fatalf("fail = isError %v code %q %q; want a tool error without a code", res.IsError, runtime.RefusalCode(res), text(res))
		}
	})
}

// TestApprovalAndPolicy: a destructive tool goes through policies.approval
// (deny, ask with and without an Approver, allow), CEL rules over the
// caller, and denied_tools. A tool a caller may never call, whatever the
// arguments, is TOOL_UNKNOWN to that caller (it is not listed to them);
// a context with no caller (an operator's) is told TOOL_DENIED.
func TestApprovalAndPolicy(t *testing.T) {
	t.Parallel()
	sre := heddle.Identity{Subject: "alice", Roles: []string{"sre"}}
	dev := heddle.Identity{Subject: "bob", Roles: []string{"dev"}}
	operator := heddle.Identity{Subject: "\x00operator"} // no caller on the context
	approve := func(ok bool) runtime.Approver {
		return func(_ context.Context, req runtime.ApprovalRequest) (bool, error) {
			if req.Agent != "x" || req.Tool.Name != "add_tool" || !req.Tool.Destructive || req.Args["name"] == nil {
				return false, fmt.Errorf("unexpected approval request %+v", req)
			}
			return ok, nil
		}
	}
	tests := []struct {
		name     string
		policies string
		approver runtime.Approver
		caller   heddle.Identity
		want     diag.Code // "" means it runs
	}{
		{"deny", `{approval: deny}`, nil, sre, diag.ToolUnknown},
		{"deny/operator", `{approval: deny}`, nil, operator, diag.ToolDenied},
		{"ask/no-approver", `{approval: ask}`, nil, sre, diag.ToolApprovalRequired},
		{"default-is-ask", `{}`, nil, sre, diag.ToolApprovalRequired},
		{"ask/approved", `{approval: ask}`, approve(true), sre, ""},
		{"ask/rejected", `{approval: ask}`, approve(false), sre, diag.ToolApprovalRequired},
		{"allow", `{approval: allow}`, nil, dev, ""},
		{"rule-deny/sre", `{approval: allow, rules: [{when: 'tool.destructive && !("sre" in caller.roles)', effect: deny}]}`, nil, sre, ""},
		{"rule-deny/dev", `{approval: allow, rules: [{when: 'tool.destructive && !("sre" in caller.roles)', effect: deny}]}`, nil, dev, diag.ToolUnknown},
		{"rule-deny/anonymous", `{approval: allow, rules: [{when: 'tool.destructive && !("sre" in caller.roles)', effect: deny}]}`, nil, heddle.Identity{}, diag.ToolUnknown},
		{"rule-deny/operator", `{approval: allow, rules: [{when: 'tool.destructive && !("sre" in caller.roles)', effect: deny}]}`, nil, operator, diag.ToolDenied},
		{"rule-deny-on-args/dev", `{approval: allow, rules: [{when: 'tool.destructive && args.name == "made"', effect: deny}]}`, nil, dev, diag.ToolDenied},
		{"rule-allow/sre", `{approval: deny, rules: [{when: '"sre" in caller.roles', effect: allow}]}`, nil, sre, ""},
		{"rule-allow/dev", `{approval: deny, rules: [{when: '"sre" in caller.roles', effect: allow}]}`, nil, dev, diag.ToolUnknown},
		{"denied-tools", `{approval: allow, denied_tools: ["add_*"]}`, nil, sre, diag.ToolUnknown},
		{"denied-tools/operator", `{approval: allow, denied_tools: ["add_*"]}`, nil, operator, diag.ToolDenied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, args: [--destructive, add_tool]}
`, map[string]string{"x": "capabilities: [{kind: mcp, server: a}]\npolicies: " + tc.policies + "\n"},
				runtime.Options{Approver: tc.approver})
			ts := toolsetOf(t, rt, "x")
			ctx := context.Background()
			if tc.caller.Subject != operator.Subject {
				ctx = heddle.WithCaller(ctx, tc.caller)
			}
			res, err := ts.Call(ctx, "add_tool", map[string]any{"name": "made"})
			if err != nil {
				t.Fatalf("add_tool: %v", err)
			}
			if got := runtime.RefusalCode(res); got != tc.want {
				t.Fatalf("add_tool: code %q (%s), want %q", got, text(res), tc.want)
			}
			if tc.want == "" && text(res) != "added made" {
				t.Fatalf("add_tool = %q, want it to run", text(res))
			}
			// Read-only tools are not subject to approval.
			if !strings.HasPrefix(tc.name, "denied-tools") {
				if res, err := ts.Call(ctx, "echo", map[string]any{"text": "hi"}); err != nil || res.IsError {
					t.Errorf("echo: %v %v", res, err)
				}
			}
		})
	}
}

// TestArgsValidated: arguments that do not match the tool's input schema
// are refused with TOOL_ARGS_INVALID before anything is sent. The server
// dies on its second call (--crash-after 1) and echo is destructive here, so
// had any refused call reached it, the valid call at the end would fail.
func TestArgsValidated(t *testing.T) {
	t.Parallel()
	rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, args: [--crash-after, "1", --destructive, echo]}
`, map[string]string{"x": "capabilities: [{kind: mcp, server: a}]\npolicies: {approval: allow}\n"}, runtime.Options{})
	ts := toolsetOf(t, rt, "x")
	for _, args := range []map[string]any{
		nil,
		{},
		{"text": 5},
		{"text": "a", "extra": true},
	} {
		wantRefusal(t, ts, "echo", args, diag.ToolArgsInvalid)
	}
	if res := mustCall(t, ts, "echo", map[string]any{"text": "ok"}); text(res) != "ok" {
		t.Fatalf("echo = %q", text(res))
	}
}

// TestHTTPConnectionsReused: calls over Streamable HTTP reuse the client's
// connections, also when the caller cancels its context right after each
// call, and concurrent calls reuse the connections earlier ones opened. go-sdk reads the rest of a response stream after handing over the
// result; a call context cancelled at once would race that read and make
// net/http drop the connection, so that later calls dial again.
func TestHTTPConnectionsReused(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	hs := httptest.NewUnstartedServer(testmcp.Handler(nil))
	hs.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	hs.Start()
	t.Cleanup(hs.Close)
	rt := openWith(t, fmt.Sprintf("ai:\n  mcp_servers:\n    a: {url: %s/mcp, timeout_ms: 5000}\n", hs.URL),
		map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`}, runtime.Options{})
	ts := toolsetOf(t, rt, "x")
	for range 5 { // the pool settles: start-up's own requests, the event stream
		mustCall(t, ts, "echo", map[string]any{"text": "hi"})
	}
	before := conns.Load()
	for i := range 400 {
		if i%2 == 0 {
			mustCall(t, ts, "echo", map[string]any{"text": "hi"})
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := ts.Call(ctx, "echo", map[string]any{"text": "hi"})
		cancel()
		if err != nil || res.IsError {
			t.Fatalf("echo = %v, %v", res, err)
		}
	}
	// A call may start while the previous one's stream is still being
	// read, and so take a second connection; a dropped connection would
	// instead show as new connections all along (about one call in six).
	if n := conns.Load() - before; n > 3 {
		t.Errorf("400 sequential calls opened %d new connections; want at most 3", n)
	}

	// Concurrent calls: the connections the first round opens stay in the
	// pool for the next rounds (net/http keeps only two per host unless
	// told otherwise).
	before = conns.Load()
	for range 6 {
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				if res, err := ts.Call(context.Background(), "sleep", map[string]any{"ms": 20}); err != nil || res.IsError {
					t.Errorf("sleep = %v, %v", res, err)
				}
			})
		}
		wg.Wait()
	}
	if n := conns.Load() - before; n > 40 {
		t.Errorf("6 rounds of 32 concurrent calls opened %d new connections; want at most 40", n)
	}
}
