package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EventKind says how a server's tool changed.
type EventKind string

const (
	ToolAdded   EventKind = "added"
	ToolRemoved EventKind = "removed"
	ToolUpdated EventKind = "updated"
)

// Event is one change of a server's tools, found by re-listing it after a
// list_changed notification or a reconnect.
type Event struct {
	Kind   EventKind `json:"kind"`
	Server string    `json:"server"`
	Tool   string    `json:"tool"` // the tool's own name at the server
}

// watchBuffer is each subscriber's buffer; a subscriber that falls this far
// behind loses events rather than blocking re-listing.
const watchBuffer = 64

type watcher struct {
	ch      chan Event
	dropped atomic.Uint64
}

type watchers struct {
	mu     sync.Mutex
	set    map[*watcher]bool
	closed bool
}

// Watch subscribes to tool changes. The subscription is registered before
// Watch returns, so no change after the call is missed for lack of one.
// The channel closes when ctx ends or the runtime closes. A subscriber that
// does not keep up loses events; it never blocks the runtime.
func (rt *Runtime) Watch(ctx context.Context) <-chan Event {
	w := &watcher{ch: make(chan Event, watchBuffer)}
	ws := &rt.watchers
	ws.mu.Lock()
	if ws.closed {
		ws.mu.Unlock()
		close(w.ch)
		return w.ch
	}
	if ws.set == nil {
		ws.set = map[*watcher]bool{}
	}
	ws.set[w] = true
	ws.mu.Unlock()
	context.AfterFunc(ctx, func() {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		if ws.set[w] {
			delete(ws.set, w)
			close(w.ch)
		}
	})
	return w.ch
}

func (ws *watchers) any() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.set) > 0
}

func (ws *watchers) send(ev Event) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.set {
		select {
		case w.ch <- ev:
		default:
			w.dropped.Add(1)
		}
	}
}

func (ws *watchers) closeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.closed = true
	for w := range ws.set {
		close(w.ch)
	}
	ws.set = nil
}

// toolsChanged diffs two listings of a server and tells the watchers.
func (rt *Runtime) toolsChanged(server string, old, cur []*mcp.Tool) {
	if !rt.watchers.any() {
		return
	}
	before := map[string][32]byte{}
	for _, t := range old {
		before[t.Name] = toolHash(t)
	}
	seen := map[string]bool{}
	for _, t := range cur {
		seen[t.Name] = true
		h, had := before[t.Name]
		switch {
		case !had:
			rt.watchers.send(Event{Kind: ToolAdded, Server: server, Tool: t.Name})
		case h != toolHash(t):
			rt.watchers.send(Event{Kind: ToolUpdated, Server: server, Tool: t.Name})
		}
	}
	for _, t := range old {
		if !seen[t.Name] {
			rt.watchers.send(Event{Kind: ToolRemoved, Server: server, Tool: t.Name})
		}
	}
}

// toolHash fingerprints a tool's definition: name, description, schemas
// and annotations.
func toolHash(t *mcp.Tool) [32]byte {
	b, _ := json.Marshal(t)
	return sha256.Sum256(b)
}
