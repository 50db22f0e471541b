package runtime_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/proctest"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

const reopenBefore = `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    keep: {transport: stdio, command: $TESTMCP}
    change: {transport: stdio, command: $TESTMCP}
    gone: {transport: stdio, command: $TESTMCP}
`

// The generation after: keep is unchanged but granted by one more agent
// and optional now (neither is part of its connection), change has an
// environment of its own, gone is removed and new added.
const reopenAfter = `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    keep: {transport: stdio, command: $TESTMCP, required: false}
    change: {transport: stdio, command: $TESTMCP, env: {V: "2"}}
    new: {transport: stdio, command: $TESTMCP}
`

var (
	reopenBeforeAgents = map[string]string{
		"k": `capabilities: [{kind: mcp, server: keep}]`,
		"c": `capabilities: [{kind: mcp, server: change}]`,
		"g": `capabilities: [{kind: mcp, server: gone}]`,
	}
	reopenAfterAgents = map[string]string{
		"k":  `capabilities: [{kind: mcp, server: keep}]`,
		"k2": `capabilities: [{kind: mcp, server: keep}]`,
		"c":  `capabilities: [{kind: mcp, server: change}]`,
		"n":  `capabilities: [{kind: mcp, server: new}]`,
	}
)

func pidThrough(t *testing.T, rt *runtime.Runtime, agent string) int {
	t.Helper()
	return intField(t, mustCall(t, toolsetOf(t, rt, agent), "pid", nil), "pid")
}

// TestReopenAdopts: Reopen keeps the session and process of a server
// whose connection is unchanged, opens the changed and new ones, and
// leaves the generation before serving whole until it is closed; closing
// it then ends only what the new generation did not adopt.
func TestReopenAdopts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old, err := runtime.Open(ctx, compilePlan(t, reopenBefore, reopenBeforeAgents), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	keep, change, gone := pidThrough(t, old, "k"), pidThrough(t, old, "c"), pidThrough(t, old, "g")

	rt, err := runtime.Reopen(ctx, compilePlan(t, reopenAfter, reopenAfterAgents), runtime.Options{}, old)
	if err != nil {
		t.Fatalf("Reopen: %v", err)
	}
	defer rt.Close()
	if got := pidThrough(t, rt, "k"); got != keep {
		t.Errorf("unchanged server keep: pid %d, was %d", got, keep)
	}
	if got := pidThrough(t, rt, "k2"); got != keep {
		t.Errorf("unchanged server keep, through the agent added: pid %d, was %d", got, keep)
	}
	if got := pidThrough(t, rt, "c"); got == change {
		t.Errorf("changed server change kept its process %d", change)
	}
	pidThrough(t, rt, "n")
	if _, err := rt.Toolset("g"); !diag.Has(err, diag.AgentUnknown) {
		t.Errorf("removed agent g: %v, want AGENT_UNKNOWN", err)
	}
	for _, d := range rt.Health().Dependencies {
		if d.Name == "keep" && (d.Required || len(d.Agents) != 2 || d.State != driver.StateReady) {
			t.Errorf("the new generation reports keep as %+v, want its own plan's: optional, granted to k and k2, ready", d)
		}
	}

	// The generation before still serves every server it had.
	if pidThrough(t, old, "c") != change || pidThrough(t, old, "g") != gone || pidThrough(t, old, "k") != keep {
		t.Error("the generation before does not serve its own servers any more")
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, 5*time.Second, change, gone)
	if !proctest.Alive(keep) {
		t.Fatal("closing the generation before ended the server the new one adopted")
	}
	if got := pidThrough(t, rt, "k"); got != keep {
		t.Errorf("keep after the old generation closed: pid %d, was %d", got, keep)
	}
	// The adopted server's list_changed reaches the generation that holds
	// it now.
	ts := toolsetOf(t, rt, "k")
	mustCall(t, ts, "add_tool", map[string]any{"name": "fresh"})
	eventually(t, 5*time.Second, "the new tool in the new generation's toolset", func() bool {
		tools, err := ts.Tools(ctx)
		return err == nil && slices.ContainsFunc(tools, func(tl runtime.Tool) bool { return tl.Name == "fresh" })
	})
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, 5*time.Second, keep)
}

// TestReopenFailureKeepsPrev: a generation that cannot be opened (a new
// required server does not start) fails with its code and changes nothing:
// the generation before goes on with the same processes, and the
// reference the failed one took on an adopted server is given back.
func TestReopenFailureKeepsPrev(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old, err := runtime.Open(ctx, compilePlan(t, reopenBefore, reopenBeforeAgents), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	keep := pidThrough(t, old, "k")
	broken := `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    keep: {transport: stdio, command: $TESTMCP}
    bad: {transport: stdio, command: /nonexistent/heddle-test-server}
`
	_, err = runtime.Reopen(ctx, compilePlan(t, broken, map[string]string{
		"k": `capabilities: [{kind: mcp, server: keep}]`, "b": `capabilities: [{kind: mcp, server: bad}]`,
	}), runtime.Options{}, old)
	if !diag.Has(err, diag.MCPServerUnreachable) {
		t.Fatalf("Reopen with a server that cannot start: %v, want MCP_SERVER_UNREACHABLE", err)
	}
	if got := pidThrough(t, old, "k"); got != keep {
		t.Errorf("after a failed reopen keep runs as %d, was %d", got, keep)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, 5*time.Second, keep)
}

// TestGenerationsDrain: after Swap, Acquire hands out the new runtime at
// once, a call that began on the old one finishes on it, and the old one
// closes when that call releases it — not before. /readyz's fields say
// which generation is live.
func TestGenerationsDrain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old, err := runtime.Open(ctx, compilePlan(t, reopenBefore, reopenBeforeAgents), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gens := runtime.NewGenerations(old)
	defer gens.Close()
	if rep := gens.Health(); rep.Generation != 1 || rep.PlanHash != old.PlanHash() || len(rep.PlanHash) != 64 {
		t.Fatalf("first generation's report: %+v", rep)
	}
	held, release := gens.Acquire()
	gone := pidThrough(t, held, "g")
	var wg sync.WaitGroup
	var slept error
	wg.Go(func() {
		res, err := toolsetOf(t, held, "g").Call(ctx, "sleep", map[string]any{"ms": 300})
		if err == nil && res.IsError {
			err = diag.New(runtime.RefusalCode(res), "%s", text(res))
		}
		slept = err
	})

	rt, err := runtime.Reopen(ctx, compilePlan(t, reopenAfter, reopenAfterAgents), runtime.Options{}, gens.Current())
	if err != nil {
		t.Fatal(err)
	}
	if n := gens.Swap(rt); n != 2 {
		t.Fatalf("Swap: generation %d, want 2", n)
	}
	now, done := gens.Acquire()
	if now != rt {
		t.Fatal("Acquire after Swap does not hand out the new runtime")
	}
	done()
	wg.Wait()
	if slept != nil {
		t.Errorf("a call on the old generation during the swap failed: %v", slept)
	}
	time.Sleep(100 * time.Millisecond)
	if !proctest.Alive(gone) {
		t.Fatal("the old generation closed while a caller still held it")
	}
	release()
	waitGone(t, 5*time.Second, gone)

	gens.Failed(time.Now(), []diag.Code{diag.ConfigParse})
	if rep := gens.Health(); rep.Generation != 2 || rep.PlanHash != rt.PlanHash() || rep.LastReloadError == nil || rep.LastReloadError.Codes[0] != diag.ConfigParse {
		t.Errorf("after a failed reload: %+v", rep)
	}
	keep := pidThrough(t, rt, "k")
	if err := gens.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, 5*time.Second, keep)
	if _, done := gens.Acquire(); done == nil {
		t.Fatal("Acquire after Close gave no release function")
	}
}

// TestGenerationsChanged: the channel Changed returns closes at the next
// Swap (not before), the one after it at Close, and after Close there is
// none.
func TestGenerationsChanged(t *testing.T) {
	t.Parallel()
	open := func() *runtime.Runtime {
		rt, err := runtime.Open(context.Background(), compilePlan(t, "ai: {}\n", map[string]string{"u": "capabilities: []\n"}), runtime.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	gens := runtime.NewGenerations(open())
	first := gens.Changed()
	if first == nil || closed(first) {
		t.Fatal("Changed before any swap: nil or closed")
	}
	gens.Swap(open())
	second := gens.Changed()
	if !closed(first) || second == nil || closed(second) {
		t.Fatalf("after Swap: the first channel closed %v, the second %v (nil %v)", closed(first), closed(second), second == nil)
	}
	if err := gens.Close(); err != nil {
		t.Fatal(err)
	}
	if !closed(second) || gens.Changed() != nil {
		t.Errorf("after Close: the second channel closed %v, Changed %v, want closed and nil", closed(second), gens.Changed())
	}
}
