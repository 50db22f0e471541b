package runtime

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// changingSource is a kind source whose tools the test replaces.
type changingSource struct {
	mu    sync.Mutex
	gen   uint64
	tools []*mcp.Tool
}

func (c *changingSource) set(names ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.tools = nil
	for _, n := range names {
		c.tools = append(c.tools, &mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}})
	}
}

func (c *changingSource) Kind() string   { return "usecase" }
func (c *changingSource) Name() string   { return "uc" }
func (c *changingSource) Prefix() string { return "uc" }
func (c *changingSource) Tools(context.Context) ([]*mcp.Tool, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tools, c.gen, nil
}
func (c *changingSource) Call(context.Context, *mcp.Tool, map[string]any, driver.CallOptions) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{}, nil
}
func (c *changingSource) Timing() driver.Timing { return driver.Timing{Timeout: time.Second} }
func (c *changingSource) MaxResultBytes() int   { return 1 << 20 }
func (c *changingSource) Down() bool            { return false }

// TestIndexFreshness: a toolset's index is reused while nothing changed —
// the runtime's generation has not moved: every kind tells the runtime of
// a change through driver.Events — and rebuilt once it moved and a source
// reports a new generation. A moved runtime generation with no change
// behind it keeps the same index and records the new generation.
func TestIndexFreshness(t *testing.T) {
	src := &changingSource{}
	src.set("a")
	rt := &Runtime{}
	ts := &Toolset{rt: rt, agent: &plan.Agent{Name: "x"}, sources: []*kindSource{newKindSource("fake", src)}}
	ctx := context.Background()
	names := func(bi *builtIndex) []string { return bi.names.names }

	first, err := ts.index(ctx)
	if err != nil || !slices.Equal(names(first), []string{"a"}) {
		t.Fatalf("index = %v, %v", names(first), err)
	}
	if again, _ := ts.index(ctx); again != first {
		t.Fatal("an unchanged toolset rebuilt its index")
	}
	if ts.mayList() {
		t.Error("mayList with nothing changed")
	}

	src.set("a", "b")
	if again, _ := ts.index(ctx); again != first {
		t.Fatal("the index was rebuilt before the source's kind told the runtime of a change")
	}
	rt.toolsGen.Add(1) // the kind's driver.Events.Stale
	second, err := ts.index(ctx)
	if err != nil || !slices.Equal(names(second), []string{"a", "b"}) {
		t.Fatalf("after the source changed, index = %v, %v", names(second), err)
	}

	rt.toolsGen.Add(1) // some server's tools went stale
	if !ts.mayList() {
		t.Error("mayList is false after the runtime's generation moved")
	}
	third, _ := ts.index(ctx)
	if third != second || third.rtGen.Load() != rt.toolsGen.Load() {
		t.Errorf("a change elsewhere rebuilt the index (%p, %p) or left its generation behind", third, second)
	}
	if ts.mayList() {
		t.Error("mayList stays true after the index caught up")
	}
}
