package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/calldeadline"
	"github.com/heddlehq/heddle/internal/resultcap"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPHandle is application code's direct, filtered view of one server: the
// same shared client agents use (no second connection), with no model in
// between. Failures are errors with codes, never refusal results: there is
// no model to read them. A handle is safe for concurrent use.
type MCPHandle struct {
	rt  *Runtime
	src *mcpSource
}

// MCP returns a handle on server, limited to the tools matching include
// (none: every tool). The server must be one the runtime opened: granted to
// an agent, or declared in Options.MCPUses, where its filters were checked
// at start-up. Patterns are checked again here against what the server
// offers, so a handle whose filter matches nothing fails now with
// MCP_FILTER_UNMATCHED rather than later.
func (rt *Runtime) MCP(server string, include ...string) (*MCPHandle, error) {
	s, err := rt.server(server)
	if err != nil {
		return nil, err
	}
	if err := rt.checkFilters(server, include, nil, "application code"); err != nil {
		return nil, err
	}
	return &MCPHandle{rt: rt, src: &mcpSource{srv: s, views: []view{{include: include}}}}, nil
}

// Tools lists the handle's tools.
func (h *MCPHandle) Tools(ctx context.Context) ([]*mcp.Tool, error) {
	defs, _, err := h.src.tools(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*mcp.Tool, len(defs))
	for i, d := range defs {
		out[i] = d.tool
	}
	return out, nil
}

// Call calls one of the handle's tools by its own name. The server's
// timeout_ms bounds it (TRANSPORT_TIMEOUT); a tool outside the filter is
// TOOL_UNKNOWN; a server that is down is TOOL_UNAVAILABLE.
func (h *MCPHandle) Call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	defs, _, err := h.src.tools(ctx)
	if err != nil {
		return nil, err
	}
	var def *toolDef
	for _, d := range defs {
		if d.tool.Name == name {
			def = d
			break
		}
	}
	if def == nil {
		return nil, diag.New(diag.ToolUnknown, "server %s offers no tool %q to this handle", h.src.name(), name)
	}
	scope := calldeadline.New(ctx, time.Now().Add(h.src.transportTimeout()), lingers(h.src))
	res, err := h.src.call(scope.Context(), def, args, &noCallOptions)
	scope.End(err == nil)
	switch {
	case err == nil:
		return resultcap.Cap(res, h.src.maxResultBytes()), nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case calldeadline.Expired(scope.Context()):
		return nil, diag.New(diag.TransportTimeout, "server %s: %s did not answer within timeout_ms", h.src.name(), name)
	}
	return nil, err
}

// session returns the server's live session for listings.
func (h *MCPHandle) session(ctx context.Context) (*mcp.ClientSession, func(), error) {
	release, ok := h.src.srv.acquire()
	if !ok {
		return nil, nil, diag.New(diag.ToolUnavailable, "server %s is closed", h.src.name())
	}
	sess, err := h.src.srv.session(ctx)
	if err != nil {
		release()
		return nil, nil, err
	}
	return sess, release, nil
}

// Resources lists every resource the server offers (every page).
func (h *MCPHandle) Resources(ctx context.Context) ([]*mcp.Resource, error) {
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
		return nil, fmt.Errorf("server %s: resources/list: %w", h.src.name(), err)
	}
	return out, nil
}

// ReadResource reads one resource.
func (h *MCPHandle) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	sess, release, err := h.session(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
}

// Prompts lists every prompt the server offers (every page).
func (h *MCPHandle) Prompts(ctx context.Context) ([]*mcp.Prompt, error) {
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
		return nil, fmt.Errorf("server %s: prompts/list: %w", h.src.name(), err)
	}
	return out, nil
}

// GetPrompt gets one prompt with its arguments.
func (h *MCPHandle) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	sess, release, err := h.session(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return sess.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
}
