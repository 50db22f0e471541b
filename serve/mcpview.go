package serve

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/runtime"
)

// sessionView is one MCP session's view of its agent's toolset, across
// reloads: each operation runs on the generation live when it starts
// (held until it ends), and a view made from an earlier generation's
// toolset is carried over to the new one with what its model loaded.
type sessionView struct {
	gens  *runtime.Generations
	agent string

	mu   sync.Mutex
	view *runtime.View
}

func newSessionView(gens *runtime.Generations, agent string) (*sessionView, error) {
	rt, done := gens.Acquire()
	defer done()
	ts, err := rt.Toolset(agent)
	if err != nil {
		return nil, err
	}
	return &sessionView{gens: gens, agent: agent, view: ts.NewView()}, nil
}

// current returns the session's view on the live generation, and the
// release of that generation.
func (v *sessionView) current(ctx context.Context) (*runtime.View, func(), error) {
	rt, done := v.gens.Acquire()
	ts, err := rt.Toolset(v.agent)
	if err != nil {
		done()
		return nil, nil, err
	}
	v.mu.Lock()
	old := v.view
	v.mu.Unlock()
	nv, err := old.On(ctx, ts)
	if err != nil {
		done()
		return nil, nil, err
	}
	if nv != old {
		v.mu.Lock()
		v.view = nv
		v.mu.Unlock()
	}
	return nv, done, nil
}

func (v *sessionView) Tools(ctx context.Context) ([]runtime.Tool, error) {
	return liveView(v.current).Tools(ctx)
}

func (v *sessionView) Call(ctx context.Context, name string, args map[string]any, opts ...runtime.CallOption) (*mcp.CallToolResult, error) {
	return liveView(v.current).Call(ctx, name, args, opts...)
}

// liveView is a toolset whose view is found at each operation, with the
// release of the generation it is on: a session's (sessionView.current),
// a kept conversation's (conversationToolset.view).
type liveView func(ctx context.Context) (*runtime.View, func(), error)

func (f liveView) Tools(ctx context.Context) ([]runtime.Tool, error) {
	view, done, err := f(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return view.Tools(ctx)
}

func (f liveView) Call(ctx context.Context, name string, args map[string]any, opts ...runtime.CallOption) (*mcp.CallToolResult, error) {
	view, done, err := f(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return view.Call(ctx, name, args, opts...)
}
