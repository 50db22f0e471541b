package a2alive

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime/driver"
)

// source is one grant of a remote agent: its one tool. Grants of one agent
// share the agent.
type source struct {
	a *remote
}

// Name is the name the deployment gives the remote agent.
func (s *source) Name() string { return s.a.name }

// Tools returns the agent's tool, also while the agent is down (its calls
// answer TOOL_UNAVAILABLE then); the generation changes when the card does.
func (s *source) Tools(context.Context) ([]*mcp.Tool, uint64, error) {
	tools, gen := s.a.tools()
	return tools, gen, nil
}

// Timing is the agent's timeout_ms: the wait for one call, polling
// included.
func (s *source) Timing() driver.Timing {
	return driver.Timing{Timeout: time.Duration(s.a.spec.TimeoutMS) * time.Millisecond}
}

// MaxResultBytes caps an answer as an MCP server's result is capped.
func (s *source) MaxResultBytes() int { return s.a.spec.MaxResultBytes }

// Down reports an agent whose card has not been fetched, or that a call
// could not reach since.
func (s *source) Down() bool { return s.a.endpoint() == nil }

// Wake has the agent's card fetched now, without waiting for it.
func (s *source) Wake() { s.a.sup.Wake() }

// Recheck has the agent's card fetched now and waits for it (within ctx,
// at most driver.RecheckWait); it reports whether the agent is up.
func (s *source) Recheck(ctx context.Context) bool { return s.a.recheck(ctx) != nil }

// Call sends args.message to the agent and returns its answer. An agent
// that is down is re-checked first — its card is fetched now, and the call
// waits a moment for that — so that an agent that is back serves the call
// whatever the backoff says.
func (s *source) Call(ctx context.Context, _ *mcp.Tool, args map[string]any, _ driver.CallOptions) (*mcp.CallToolResult, error) {
	ep := s.a.endpoint()
	if ep == nil {
		ep = s.a.recheck(ctx)
	}
	if ep == nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, diag.New(diag.ToolUnavailable, "the remote agent %s is unavailable; try again later", s.a.name)
	}
	text, ok := args["message"].(string)
	if !ok {
		return nil, diag.New(diag.ToolArgsInvalid, "message must be a string")
	}
	ans, err := s.a.send(ctx, ep, text)
	var unreachable *unreachableError
	switch {
	case err == nil:
		return &mcp.CallToolResult{IsError: ans.isError, Content: []mcp.Content{&mcp.TextContent{Text: ans.text}}}, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &unreachable):
		s.a.inst.log.DebugContext(ctx, "remote agent call failed", "agent", s.a.name, "reason", unreachable.err.Error())
		s.a.markDown()
		return nil, diag.Wrap(diag.ToolUnavailable, err, "the remote agent %s could not be reached; try again later", s.a.name)
	}
	return nil, err
}

var (
	_ driver.Source           = (*source)(nil)
	_ driver.TimedSource      = (*source)(nil)
	_ driver.CappedSource     = (*source)(nil)
	_ driver.FallibleSource   = (*source)(nil)
	_ driver.RecheckingSource = (*source)(nil)
)
