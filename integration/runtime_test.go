package integration

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/syncbuf"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// markEnv is declared in the env of every stdio server the tests configure,
// with a value unique to one runtime: the tests find the processes the
// runtime started by it, and check that they are gone after Close.
const markEnv = "HEDDLE_TEST_MARK"

var markSeq atomic.Int64

// harness is one open runtime and what the test needs to check it.
type harness struct {
	rt   *runtime.Runtime
	mark string // the value of markEnv in this runtime's stdio servers
}

// compilePlan compiles an api.yaml and agents given as name → agent.yaml,
// as heddle check would, failing the test on any error.
func compilePlan(t testing.TB, api string, agents map[string]string) *plan.Plan {
	t.Helper()
	return plantest.Must(t, api, agents)
}

// open compiles api (after replacing $MARK with a fresh mark) and agents,
// opens a runtime on it and closes it when the test ends. The cleanup then
// checks that every process the runtime started — found by the mark in its
// environment, and every member of its process group — has exited.
func open(t *testing.T, api string, agents map[string]string) *harness {
	t.Helper()
	h := &harness{mark: fmt.Sprintf("m%d-%d", time.Now().UnixNano(), markSeq.Add(1))}
	api = strings.ReplaceAll(api, "$MARK", h.mark)
	p := compilePlan(t, api, agents)

	log := &testLog{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("runtime log:\n%s", log.String())
		}
	})
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))

	// The deadline of Open is generous: node starts slowly on a busy CI
	// machine, and these tests are about behaviour, not start-up speed.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := runtime.Open(ctx, p, runtime.Options{Logger: logger, ClientName: "heddle-integration"})
	if err != nil {
		// Open closes what it opened on failure; the processes must be gone.
		requireGone(t, procsWithEnv(markEnv+"="+h.mark), 10*time.Second)
		t.Fatalf("Open: %v", err)
	}
	h.rt = rt
	t.Cleanup(func() {
		procs := procsWithEnv(markEnv + "=" + h.mark)
		for _, p := range procs {
			procs = append(procs, processGroup(p.pid)...)
		}
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		requireGone(t, procs, 10*time.Second)
	})
	return h
}

// processes returns the live processes this runtime started (by mark).
func (h *harness) processes() []proc { return procsWithEnv(markEnv + "=" + h.mark) }

func (h *harness) toolset(t *testing.T, agent string) *runtime.Toolset {
	t.Helper()
	ts, err := h.rt.Toolset(agent)
	if err != nil {
		t.Fatalf("Toolset(%s): %v", agent, err)
	}
	return ts
}

// toolNames lists a toolset's tool names, sorted.
func toolNames(t *testing.T, ts *runtime.Toolset) []string {
	t.Helper()
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	names := make([]string, len(tools))
	for i, tl := range tools {
		names[i] = tl.Name
	}
	slices.Sort(names)
	return names
}

// toolByName finds one tool of a toolset.
func toolByName(t *testing.T, ts *runtime.Toolset, name string) runtime.Tool {
	t.Helper()
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	for _, tl := range tools {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return runtime.Tool{}
}

// call runs a tool that must succeed (no error, no IsError).
func call(t *testing.T, ts *runtime.Toolset, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res := callRaw(t, ts, name, args)
	if res.IsError {
		t.Fatalf("%s(%v): IsError, code %q: %s", name, args, runtime.RefusalCode(res), text(res))
	}
	return res
}

// callRaw runs a tool and returns its result, failing only on an error.
func callRaw(t *testing.T, ts *runtime.Toolset, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := ts.Call(ctx, name, args)
	if err != nil {
		t.Fatalf("%s(%v): %v", name, args, err)
	}
	if res == nil {
		t.Fatalf("%s(%v): nil result", name, args)
	}
	return res
}

// text concatenates a result's text parts.
func text(res *mcp.CallToolResult) string { return plantest.Text(res) }

// testLog collects the runtime's log; it is printed when a test fails.
// Writes after the test ended are kept too (they would panic on t.Log).
type testLog = syncbuf.Buffer
