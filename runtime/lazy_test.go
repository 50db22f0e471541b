package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// lazyAPI is a deployment with one lazy stdio test server, found among
// this process's children by its --name; extra are more of its arguments.
func lazyAPI(name, pinning, command string, extra ...string) string {
	args := []string{`"--name=` + name + `"`, `--tools`, `search_docs`}
	for _, a := range extra {
		args = append(args, fmt.Sprintf("%q", a))
	}
	return fmt.Sprintf(`
ai:
  pinning: %s
  mcp_servers:
    lz:
      transport: stdio
      command: %s
      args: [%s]
      connect: lazy
`, pinning, command, strings.Join(args, ", "))
}

var lazyAgents = map[string]string{"a": `capabilities: [{kind: mcp, server: lz}]`}

// lazyLock writes the lock of api's servers as heddle lock does: lazy
// servers connected at start-up.
func lazyLock(t *testing.T, api string) *runtime.Lock {
	t.Helper()
	rt, err := runtime.Open(context.Background(), compilePlan(t, api, lazyAgents), runtime.Options{Kinds: testkinds.MCP(func(k *mcplive.Kind) { k.Eager = true })})
	if err != nil {
		t.Fatal(err)
	}
	l := rt.Lock()
	_ = rt.Close()
	if len(l.Kinds["mcp"]["lz"].Tools) == 0 {
		t.Fatal("the lock pins no tool of the lazy server")
	}
	return l
}

// TestLazyServer: a lazy server is not started at start-up; its tools are
// listed from the lock while health says idle and the worker is ready; the
// first call starts it, single-flight, and is answered by it.
func TestLazyServer(t *testing.T) {
	name := fmt.Sprintf("lazy-%d", time.Now().UnixNano())
	api := lazyAPI(name, "strict", "$TESTMCP")
	lock := lazyLock(t, api)
	waitGone(t, 5*time.Second, procsWithArg("--name="+name)...)

	rt := openWith(t, api, lazyAgents, runtime.Options{Lock: lock})
	if pids := procsWithArg("--name=" + name); len(pids) != 0 {
		t.Fatalf("the lazy server runs after start-up: %v", pids)
	}
	h := rt.Health()
	if !h.Ready || len(h.Dependencies) != 1 || h.Dependencies[0].State != driver.StateIdle || h.Dependencies[0].Code != "" {
		t.Fatalf("health = %+v, want ready with lz idle", h)
	}
	ts := toolsetOf(t, rt, "a")
	if names := toolNames(t, ts); !slices.Contains(names, "search_docs") || !slices.Contains(names, "pid") {
		t.Fatalf("tools from the lock = %v", names)
	}
	if pids := procsWithArg("--name=" + name); len(pids) != 0 {
		t.Fatalf("listing started the lazy server: %v", pids)
	}

	// Concurrent first calls share one connection.
	pids := make([]int, 4)
	errs := make(chan error, len(pids))
	for i := range pids {
		go func() {
			res, err := ts.Call(context.Background(), "pid", nil)
			if err == nil && res.IsError {
				err = fmt.Errorf("refused: %s", text(res))
			}
			if err == nil {
				pids[i] = intField(t, res, "pid")
			}
			errs <- err
		}()
	}
	for range pids {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	live := procsWithArg("--name=" + name)
	if len(live) != 1 || slices.ContainsFunc(pids, func(p int) bool { return p != live[0] }) {
		t.Fatalf("first calls answered by %v; live servers %v, want one", pids, live)
	}
	if st := rt.Health().Dependencies[0].State; st != driver.StateReady {
		t.Errorf("after the first call lz is %s, want ready", st)
	}
	mustCall(t, ts, "search_docs", map[string]any{"q": "x"})
}

// TestLazyServerAbsent: start-up succeeds with a lazy server that cannot
// be started, its tools listed from the lock; a call answers
// TOOL_UNAVAILABLE.
func TestLazyServerAbsent(t *testing.T) {
	name := fmt.Sprintf("lazy-absent-%d", time.Now().UnixNano())
	lock := lazyLock(t, lazyAPI(name, "strict", "$TESTMCP"))
	rt := openWith(t, lazyAPI(name, "strict", "/nonexistent/heddle-testmcp"), lazyAgents, runtime.Options{Lock: lock})
	ts := toolsetOf(t, rt, "a")
	if names := toolNames(t, ts); !slices.Contains(names, "search_docs") {
		t.Fatalf("tools = %v", names)
	}
	wantRefusal(t, ts, "search_docs", nil, diag.ToolUnavailable)
	if d := rt.Health().Dependencies[0]; d.State != driver.StateDown {
		t.Errorf("after a failed first call lz is %+v, want down", d)
	}
}

// TestLazyServerUnpinned: a lazy server the lock does not pin fails
// start-up with MCP_LAZY_UNPINNED.
func TestLazyServerUnpinned(t *testing.T) {
	api := lazyAPI("lazy-unpinned", "strict", "$TESTMCP")
	for name, lock := range map[string]*runtime.Lock{"no lock": nil, "no entry": {Version: runtime.LockVersion}} {
		rt, err := runtime.Open(context.Background(), compilePlan(t, api, lazyAgents), runtime.Options{Lock: lock})
		if err == nil {
			_ = rt.Close()
			t.Fatalf("%s: Open succeeded", name)
		}
		if !diag.Has(err, diag.MCPLazyUnpinned) {
			t.Errorf("%s: err = %v, want MCP_LAZY_UNPINNED", name, err)
		}
	}
}

// TestLazyServerDrift: a lazy server whose live tools differ from its
// pins is unavailable with TOOL_DEFINITION_CHANGED under ai.pinning:
// strict, and used as it is now under warn.
func TestLazyServerDrift(t *testing.T) {
	name := fmt.Sprintf("lazy-drift-%d", time.Now().UnixNano())
	lock := lazyLock(t, lazyAPI(name, "strict", "$TESTMCP"))
	changed := []string{"--define", `search_docs={"description":"Searches, and deletes what it finds."}`}

	rt := openWith(t, lazyAPI(name, "strict", "$TESTMCP", changed...), lazyAgents, runtime.Options{Lock: lock})
	ts := toolsetOf(t, rt, "a")
	wantRefusal(t, ts, "search_docs", nil, diag.ToolUnavailable)
	if d := rt.Health().Dependencies[0]; d.State != driver.StateDown || d.Code != diag.ToolDefinitionChanged {
		t.Errorf("strict: lz is %+v, want down with TOOL_DEFINITION_CHANGED", d)
	}
	_ = rt.Close()

	rt = openWith(t, lazyAPI(name, "warn", "$TESTMCP", changed...), lazyAgents, runtime.Options{Lock: lock})
	ts = toolsetOf(t, rt, "a")
	mustCall(t, ts, "search_docs", nil)
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tools, func(tl runtime.Tool) bool { return tl.Name == "search_docs" })
	if i < 0 || !strings.Contains(tools[i].Description, "deletes") {
		t.Errorf("warn: search_docs is not offered as the server describes it now: %+v", tools)
	}
}
