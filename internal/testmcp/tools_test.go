package testmcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestPaging(t *testing.T) {
	opts := &Options{PageSize: 2, NumTools: 5, Tools: []string{"search_docs"}}
	want := slices.Concat(FixedTools(), []string{"search_docs", "tool_000", "tool_001", "tool_002", "tool_003", "tool_004"})
	slices.Sort(want)

	for _, kind := range []string{kindInMemory, kindStdio, kindStateless} {
		t.Run(kind, func(t *testing.T) {
			cs := connect(t, kind, opts, nil)
			ctx := testCtx(t, 10*time.Second)

			var got []string
			pages := 0
			cursor := ""
			for {
				page, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
				if err != nil {
					t.Fatalf("ListTools page %d: %v", pages, err)
				}
				pages++
				if len(page.Tools) > 2 {
					t.Errorf("page %d has %d tools, want at most 2", pages, len(page.Tools))
				}
				for _, tool := range page.Tools {
					got = append(got, tool.Name)
				}
				if cursor = page.NextCursor; cursor == "" {
					break
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tools across pages (-want +got):\n%s", diff)
			}
			if wantPages := (len(want) + 1) / 2; pages != wantPages {
				t.Errorf("got %d pages, want %d", pages, wantPages)
			}

			// The SDK's iterator follows the cursors too.
			var iterated []string
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatalf("Tools: %v", err)
				}
				iterated = append(iterated, tool.Name)
			}
			if diff := cmp.Diff(want, iterated); diff != "" {
				t.Errorf("tools from the iterator (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFixedTools(t *testing.T) {
	for _, kind := range allKinds {
		t.Run(kind, func(t *testing.T) {
			cs := connect(t, kind, nil, nil)

			if got := text(call(t, cs, "echo", map[string]any{"text": "hello, heddle"})); got != "hello, heddle" {
				t.Errorf("echo: got %q", got)
			}

			res := call(t, cs, "add", map[string]any{"a": 2, "b": 3.5})
			if diff := cmp.Diff(map[string]any{"sum": 5.5}, res.StructuredContent); diff != "" {
				t.Errorf("add structured result (-want +got):\n%s", diff)
			}

			res = call(t, cs, "image", nil)
			var img *mcp.ImageContent
			for _, c := range res.Content {
				if ic, ok := c.(*mcp.ImageContent); ok {
					img = ic
				}
			}
			if img == nil || img.MIMEType != "image/png" {
				t.Fatalf("image: no image/png content in %+v", res.Content)
			}
			if cfg, err := png.DecodeConfig(bytes.NewReader(img.Data)); err != nil || cfg.Width != 1 || cfg.Height != 1 {
				t.Errorf("image: not a 1x1 PNG: %+v, %v", cfg, err)
			}
			if text(res) == "" {
				t.Error("image: no text part")
			}

			if res := call(t, cs, "fail", map[string]any{"message": "boom"}); !res.IsError || text(res) != "boom" {
				t.Errorf("fail: got isError=%v text %q, want an error result saying boom", res.IsError, text(res))
			}

			if res := call(t, cs, "echo", map[string]any{}); !res.IsError {
				t.Error("echo without its required text: want an error result")
			}
		})
	}
}

func TestEchoingTools(t *testing.T) {
	cs := connect(t, kindInMemory, &Options{Tools: []string{"search_docs"}, NoFixedTools: true}, nil)
	args := map[string]any{"query": "rollback", "limit": 3.0}
	res := call(t, cs, "search_docs", args)
	if diff := cmp.Diff(args, res.StructuredContent); diff != "" {
		t.Errorf("structured content (-want +got):\n%s", diff)
	}
	if got, want := text(res), `{"limit":3,"query":"rollback"}`; got != want {
		t.Errorf("text: got %s, want %s", got, want)
	}
	if res := call(t, cs, "search_docs", nil); res.IsError || text(res) != "{}" {
		t.Errorf("no arguments: got isError=%v text %q, want {}", res.IsError, text(res))
	}
}

func TestAnnotations(t *testing.T) {
	cs := connect(t, kindInMemory, &Options{Tools: []string{"delete_all", "list_all"}, Destructive: []string{"delete_*", "add"}}, nil)
	destructive := map[string]bool{}
	for tool, err := range cs.Tools(testCtx(t, 10*time.Second), nil) {
		if err != nil {
			t.Fatal(err)
		}
		a := tool.Annotations
		if a == nil {
			t.Fatalf("%s: no annotations", tool.Name)
		}
		isDestructive := a.DestructiveHint != nil && *a.DestructiveHint
		if isDestructive == a.ReadOnlyHint {
			t.Errorf("%s: destructiveHint %v and readOnlyHint %v", tool.Name, isDestructive, a.ReadOnlyHint)
		}
		destructive[tool.Name] = isDestructive
	}
	for name, want := range map[string]bool{"delete_all": true, "add": true, "list_all": false, "echo": false} {
		if destructive[name] != want {
			t.Errorf("%s: destructive = %v, want %v", name, destructive[name], want)
		}
	}
}

func TestBig(t *testing.T) {
	cs := connect(t, kindInMemory, &Options{OversizedBytes: 2048}, nil)
	if got := len(text(call(t, cs, "big", map[string]any{"bytes": 1000}))); got != 1000 {
		t.Errorf("big 1000: got %d bytes", got)
	}
	if got := len(text(call(t, cs, "big", nil))); got != 2048 {
		t.Errorf("big with the default: got %d bytes, want 2048", got)
	}
	if res := call(t, cs, "big", map[string]any{"bytes": -1}); !res.IsError {
		t.Error("big -1: want an error result")
	}
}

func TestToolListChanged(t *testing.T) {
	for _, kind := range allKinds {
		t.Run(kind, func(t *testing.T) {
			changed := make(chan struct{}, 16)
			cs := connect(t, kind, nil, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					select {
					case changed <- struct{}{}:
					default:
					}
				},
			})
			hasTool := func(name string) bool {
				t.Helper()
				for tool, err := range cs.Tools(testCtx(t, 10*time.Second), nil) {
					if err != nil {
						t.Fatal(err)
					}
					if tool.Name == name {
						return true
					}
				}
				return false
			}

			call(t, cs, "add_tool", map[string]any{"name": "fresh_tool"})
			waitFor(t, changed, "list_changed after add_tool")
			if !hasTool("fresh_tool") {
				t.Error("fresh_tool not listed after add_tool")
			}
			if got := text(call(t, cs, "fresh_tool", map[string]any{"x": 1})); got != `{"x":1}` {
				t.Errorf("fresh_tool: got %q", got)
			}

			call(t, cs, "remove_tool", map[string]any{"name": "fresh_tool"})
			waitFor(t, changed, "list_changed after remove_tool")
			if hasTool("fresh_tool") {
				t.Error("fresh_tool still listed after remove_tool")
			}
		})
	}
}

func TestListChangedStorm(t *testing.T) {
	changed := make(chan struct{}, 16)
	cs := connect(t, kindInMemory, &Options{ListChangedEvery: 20 * time.Millisecond}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	for i := range 3 {
		waitFor(t, changed, fmt.Sprintf("storm notification %d", i+1))
	}
	cs.Close()
}

// waitFor waits up to 5s for a value on ch.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestSleepHonoursCancellation(t *testing.T) {
	for _, kind := range allKinds {
		t.Run(kind, func(t *testing.T) {
			cs := connect(t, kind, nil, nil)
			if res := call(t, cs, "sleep", map[string]any{"ms": 10}); res.IsError {
				t.Fatalf("sleep 10ms: %s", text(res))
			}

			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60_000}})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("sleep 60s with a 200ms deadline: got %v, want DeadlineExceeded", err)
			}
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("the cancelled call took %v", elapsed)
			}
			// The session survives a cancelled call.
			if got := text(call(t, cs, "echo", map[string]any{"text": "still here"})); got != "still here" {
				t.Errorf("echo after cancel: got %q", got)
			}
		})
	}
}

func TestHangOnCall(t *testing.T) {
	cs := connect(t, kindInMemory, &Options{HangOnCall: []string{"echo"}}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung echo: got %v, want DeadlineExceeded", err)
	}
	if res := call(t, cs, "add", map[string]any{"a": 1, "b": 1}); res.IsError {
		t.Errorf("add is not in HangOnCall but failed: %s", text(res))
	}
}

func TestPID(t *testing.T) {
	cs := connect(t, kindInMemory, nil, nil)
	res := call(t, cs, "pid", nil)
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("pid: structured content %T", res.StructuredContent)
	}
	if got, ok := m["pid"].(float64); !ok || int(got) != os.Getpid() {
		t.Errorf("pid: got %v", m["pid"])
	}
	if !strings.HasPrefix(text(res), "pid ") {
		t.Errorf("pid text: %q", text(res))
	}
}
