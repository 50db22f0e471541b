package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// TestHandleResourcesPromptsProgress reaches server-everything through
// mcplive.NewHandle — application code's direct handle on the shared client —
// for its resources and prompts (every page), and through a toolset for a
// long-running operation whose progress notifications reach the caller.
func TestHandleResourcesPromptsProgress(t *testing.T) {
	api := "ai:\n  startup_timeout_ms: 30000\n  mcp_servers:" + everythingServer(t, "ev", "stdio")
	h := open(t, api, map[string]string{"a": `capabilities: [{kind: mcp, server: ev, include: ["trigger-long-running-operation", "echo"]}]`})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	hd, err := mcplive.NewHandle(h.rt, "ev", "echo")
	if err != nil {
		t.Fatal(err)
	}
	resources, err := hd.Resources(ctx)
	if err != nil || len(resources) == 0 {
		t.Fatalf("Resources: %d, %v", len(resources), err)
	}
	rr, err := hd.ReadResource(ctx, resources[0].URI)
	if err != nil || len(rr.Contents) == 0 {
		t.Fatalf("ReadResource(%s): %v %v", resources[0].URI, rr, err)
	}
	prompts, err := hd.Prompts(ctx)
	if err != nil || len(prompts) == 0 {
		t.Fatalf("Prompts: %d, %v", len(prompts), err)
	}
	var simple string
	for _, p := range prompts {
		if p.Name == "simple-prompt" {
			simple = p.Name
		}
	}
	if simple == "" {
		t.Fatalf("no simple-prompt among %d prompts", len(prompts))
	}
	if gp, err := hd.GetPrompt(ctx, simple, nil); err != nil || len(gp.Messages) == 0 {
		t.Fatalf("GetPrompt: %v %v", gp, err)
	}
	// The handle's filter holds: only echo.
	if res, err := hd.Call(ctx, "echo", map[string]any{"message": "direct"}); err != nil || res.IsError {
		t.Fatalf("handle call: %v %v", res, err)
	}
	if _, err := hd.Call(ctx, "get-sum", map[string]any{"a": 1, "b": 2}); !diag.Has(err, diag.ToolUnknown) {
		t.Fatalf("call outside the filter: %v", err)
	}
	if _, err := mcplive.NewHandle(h.rt, "ev", "no-such-*"); !diag.Has(err, diag.MCPFilterUnmatched) {
		t.Fatalf("unmatched handle filter: %v", err)
	}

	var mu sync.Mutex
	var got []driver.Progress
	ts := h.toolset(t, "a")
	res, err := ts.Call(ctx, "trigger-long-running-operation", map[string]any{"duration": 1, "steps": 3},
		runtime.WithProgress(func(p driver.Progress) { mu.Lock(); got = append(got, p); mu.Unlock() }))
	if err != nil || res.IsError {
		t.Fatalf("long-running operation: %v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 2 || got[len(got)-1].Progress < got[0].Progress {
		t.Fatalf("progress notifications: %+v", got)
	}
}
