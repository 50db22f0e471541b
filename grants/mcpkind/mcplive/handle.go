package mcplive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/internal/calldeadline"
	"github.com/heddlehq/heddle/internal/resultcap"
	"github.com/heddlehq/heddle/runtime/driver"
)

// Handle is application code's direct, filtered view of one MCP server:
// the same shared client agents use (no second connection), with no model
// in between. Failures are errors with codes, never refusal results: there
// is no model to read them. A Handle is safe for concurrent use.
type Handle struct {
	src     *source
	timeout time.Duration // the supervisor's deadline of one call
}

// Instances are the opened kinds of a runtime, by name: a *runtime.Runtime.
type Instances interface {
	Instance(kind string) (driver.Instance, bool)
}

// NewHandle returns a handle on server, limited to the tools matching
// include (none: every tool), from the mcp kind rt opened. The server must
// be one rt opened: granted to an agent, or declared in Kind.Uses, where
// its filters were checked at start-up. Patterns are checked again against
// what the server offers, so a handle whose filter matches nothing fails
// now with MCP_FILTER_UNMATCHED rather than later.
//
//	runbooks, err := mcplive.NewHandle(rt, "runbooks", "search_*")
func NewHandle(rt Instances, server string, include ...string) (*Handle, error) {
	i := instanceOf(rt)
	if i == nil {
		return nil, diag.New(diag.MCPServerUnknown, "server %q is not opened by this runtime: it opens no MCP server", server)
	}
	return i.handle(server, include)
}

// instanceOf is the mcp kind's instance rt opened, or nil.
func instanceOf(rt Instances) *instance {
	inst, _ := rt.Instance(mcpkind.Kind{}.Name())
	i, _ := inst.(*instance)
	return i
}

// handle returns a handle on server, limited to the tools matching include.
func (i *instance) handle(server string, include []string) (*Handle, error) {
	s := i.servers[server]
	if s == nil {
		return nil, diag.New(diag.MCPServerUnknown, "server %q is not opened by this runtime", server)
	}
	if err := i.checkFilters(server, include, nil, "application code"); err != nil {
		return nil, err
	}
	return &Handle{src: &source{srv: s, inst: i, filters: []grantFilter{{include: include}}}, timeout: i.handleTimeout(server)}, nil
}

// handleTimeout is the supervisor's deadline of a call through a handle on
// server: the smallest ToolTimeout of the uses declared for it, or
// policies.tool_timeout_ms's default.
func (i *instance) handleTimeout(server string) time.Duration {
	d := time.Duration(config.DefaultToolTimeoutMS) * time.Millisecond
	for _, u := range i.uses {
		if u.Server == server && u.ToolTimeout > 0 {
			d = min(d, u.ToolTimeout)
		}
	}
	return d
}

// Tools lists the handle's tools, as the server describes them.
func (h *Handle) Tools(ctx context.Context) ([]*mcp.Tool, error) {
	_, orig, _, err := h.src.list(ctx)
	if err != nil {
		return nil, err
	}
	return slices.Clone(orig), nil
}

// Call calls one of the handle's tools by its own name, under the
// supervisor's deadline (TOOL_TIMEOUT, as an agent's call) and the
// server's timeout_ms (TRANSPORT_TIMEOUT), whichever comes first.
func (h *Handle) Call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	sctx, cancel := context.WithTimeoutCause(ctx, h.timeout, errSupervisor)
	defer cancel()
	res, err := h.call(sctx, name, args)
	if err != nil && ctx.Err() == nil && context.Cause(sctx) == errSupervisor {
		return nil, diag.Wrap(diag.ToolTimeout, context.DeadlineExceeded, "server %s: %s did not finish within the supervisor's deadline (%s)", h.src.Name(), name, h.timeout)
	}
	return res, err
}

// errSupervisor is the cause of a handle call's context that its
// supervisor's deadline ended.
var errSupervisor = errors.New("the supervisor's deadline passed")

func (h *Handle) call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	tools, _, _, err := h.src.list(ctx)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(tools, func(t *mcp.Tool) bool { return t.Name == name })
	if i < 0 {
		return nil, diag.New(diag.ToolUnknown, "server %s offers no tool %q to this handle", h.src.Name(), name)
	}
	if err := h.src.EnterCall(); err != nil {
		return nil, err
	}
	defer h.src.LeaveCall()
	scope := calldeadline.New(ctx, time.Now().Add(h.src.transportTimeout()))
	res, err := h.src.call(scope.Context(), tools[i], args, driver.CallOptions{})
	scope.End()
	switch {
	case err == nil:
		return resultcap.Cap(res, h.src.MaxResultBytes()), nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case calldeadline.Expired(scope.Context()):
		return nil, diag.New(diag.TransportTimeout, "server %s: %s did not answer within timeout_ms", h.src.Name(), name)
	}
	return nil, err
}

// session returns the server's live session for listings.
func (h *Handle) session(ctx context.Context) (*mcp.ClientSession, func(), error) {
	release, ok := h.src.srv.acquire()
	if !ok {
		return nil, nil, diag.New(diag.ToolUnavailable, "server %s is closed", h.src.Name())
	}
	sess, err := h.src.srv.session(ctx)
	if err != nil {
		release()
		return nil, nil, err
	}
	return sess, release, nil
}

// Resources lists every resource the server offers (every page).
func (h *Handle) Resources(ctx context.Context) ([]*mcp.Resource, error) {
	sess, release, err := h.session(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	out, err := paginate(func(cursor string) ([]*mcp.Resource, string, error) {
		res, err := sess.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Resources, res.NextCursor, nil
	})
	if err != nil {
		return nil, fmt.Errorf("server %s: resources/list: %w", h.src.Name(), err)
	}
	return out, nil
}

// ReadResource reads one resource.
func (h *Handle) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	sess, release, err := h.session(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
}

// Prompts lists every prompt the server offers (every page).
func (h *Handle) Prompts(ctx context.Context) ([]*mcp.Prompt, error) {
	sess, release, err := h.session(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	out, err := paginate(func(cursor string) ([]*mcp.Prompt, string, error) {
		res, err := sess.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Prompts, res.NextCursor, nil
	})
	if err != nil {
		return nil, fmt.Errorf("server %s: prompts/list: %w", h.src.Name(), err)
	}
	return out, nil
}

// GetPrompt gets one prompt with its arguments.
func (h *Handle) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	sess, release, err := h.session(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return sess.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
}
