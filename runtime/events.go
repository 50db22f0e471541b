package runtime

import "github.com/modelcontextprotocol/go-sdk/mcp"

// Events is how a kind tells the runtime that a dependency's tools changed
// (an MCP server's list_changed, a reconnect). It is safe for concurrent
// use.
type Events interface {
	// Stale says that dep's tools may have changed: toolsets ask its
	// sources for their tools again before the next lookup.
	Stale(dep string)
	// Changed reports a new listing of dep's tools that differs from the
	// last (old; nil for the first): toolsets rebuild, and watchers get one
	// event per tool added, removed or updated since old.
	Changed(dep string, old, cur []*mcp.Tool)
	// Watched reports whether anyone watches, so that a kind may re-list
	// at once rather than on the next use.
	Watched() bool
}

// events is the runtime's Events.
type events struct{ rt *Runtime }

func (e events) Stale(string) { e.rt.toolsGen.Add(1) }

func (e events) Changed(dep string, old, cur []*mcp.Tool) {
	e.rt.toolsGen.Add(1)
	if old != nil {
		e.rt.toolsChanged(dep, old, cur)
	}
}

func (e events) Watched() bool { return e.rt.watchers.any() }
