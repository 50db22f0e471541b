package runtime_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heddlehq/heddle/runtime"
)

// nextEvent waits for the next event on ch.
func nextEvent(t *testing.T, ch <-chan runtime.Event) runtime.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("watch channel closed")
			}
			return ev
		case <-timeout:
			t.Fatal("no watch event within 10s")
		}
	}
}

// TestListChangedEvents: a server adding and removing a tool (and telling
// the client with list_changed) reaches Watch subscribers as added and
// removed events, and Tools() follows, under the tool's model-facing name.
func TestListChangedEvents(t *testing.T) {
	t.Parallel()
	rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP}
`, map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`}, runtime.Options{})
	ts := toolsetOf(t, rt, "x")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := rt.Watch(ctx)

	mustCall(t, ts, "add_tool", map[string]any{"name": "new.tool"})
	if ev, want := nextEvent(t, events), (runtime.Event{Kind: runtime.ToolAdded, Server: "a", Tool: "new.tool"}); ev != want {
		t.Fatalf("event = %+v, want %+v", ev, want)
	}
	if names := toolNames(t, ts); !slices.Contains(names, "new_tool") {
		t.Fatalf("tools = %v, want new_tool (new.tool, model-facing)", names)
	}
	mustCall(t, ts, "new_tool", map[string]any{"k": 1})

	mustCall(t, ts, "remove_tool", map[string]any{"name": "new.tool"})
	if ev, want := nextEvent(t, events), (runtime.Event{Kind: runtime.ToolRemoved, Server: "a", Tool: "new.tool"}); ev != want {
		t.Fatalf("event = %+v, want %+v", ev, want)
	}
	if names := toolNames(t, ts); slices.Contains(names, "new_tool") {
		t.Fatalf("tools = %v after remove_tool", names)
	}

	// The subscription ends with its context.
	cancel()
	waitClosed(t, events, 5*time.Second)
}

// waitClosed waits until ch is closed, dropping the events still in it.
func waitClosed(t *testing.T, ch <-chan runtime.Event, within time.Duration) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("watch channel not closed within %v of its context ending", within)
		}
	}
}

// TestListChangedStormSlowSubscriber: a server announcing list_changed
// every 15 ms while a subscriber never reads. (go-sdk debounces list_changed
// by 10 ms and restarts the delay on every change, so a storm period under
// 10 ms sends nothing at all.) The subscriber's buffer fills
// and events are dropped; calls are not blocked and stay fast, and a
// subscriber that reads keeps getting events.
func TestListChangedStormSlowSubscriber(t *testing.T) {
	t.Parallel()
	rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, args: [--list-changed-every, 15ms]}
`, map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`}, runtime.Options{})
	ts := toolsetOf(t, rt, "x")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := rt.Watch(ctx) // never read
	reader := rt.Watch(ctx)
	var (
		mu   sync.Mutex
		seen int
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for range reader {
			mu.Lock()
			seen++
			mu.Unlock()
		}
	}()

	// Calls run until the reading subscriber has seen well over a buffer's
	// worth of events, so the slow one must have dropped some.
	const minEvents = 80
	enough := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen >= minEvents
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !enough() && time.Since(start) < 20*time.Second {
				cstart := time.Now()
				res, err := ts.Call(context.Background(), "echo", map[string]any{"text": "storm"})
				if err != nil || res.IsError {
					t.Errorf("call during the storm: %v %v", res, err)
					return
				}
				if d := time.Since(cstart); d > time.Second {
					t.Errorf("call took %v during the storm", d)
				}
				if _, err := ts.Tools(context.Background()); err != nil {
					t.Errorf("Tools during the storm: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if len(slow) != cap(slow) {
		t.Errorf("slow subscriber holds %d of %d events; want a full buffer (the rest dropped)", len(slow), cap(slow))
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if seen < minEvents {
		t.Errorf("reading subscriber saw %d events during the storm, want %d", seen, minEvents)
	}
	t.Logf("reading subscriber saw %d events in %v", seen, time.Since(start))
}
