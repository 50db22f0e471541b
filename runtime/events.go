package runtime

import "github.com/modelcontextprotocol/go-sdk/mcp"

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
