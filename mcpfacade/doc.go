// Package mcpfacade serves one agent's governed toolset as an MCP server:
// the facade `heddle mcp AGENT` runs over stdio and `heddle serve` at
// /mcp/{agent} over Streamable HTTP, for an agent host (Claude Code,
// Cursor, the OpenAI Agents SDK) to use heddle's tools as its own.
//
// Every tool the agent may use is offered under its model-facing name and
// description, with its input and output schemas and its hints. Every call
// goes through the toolset's Call — the same policies, approval, deadlines,
// limits and tracing as any other caller's — as the session's caller: the
// deployment's mcp.identity for a stdio session, the authenticated caller
// of the request that opened an HTTP session (fixed for the session). A
// call that needs approval is asked of the host's user by elicitation,
// when the host declared it can elicit; accept runs it, decline or cancel
// refuse it with TOOL_APPROVAL_REQUIRED, and a host that cannot elicit gets
// the refusal. When an upstream server's tools change, the session sends
// notifications/tools/list_changed of its own.
//
// Each session has an mcp.Server of its own, holding the tools of that
// session's toolset: list_changed is per session, so that a per-session
// view (deferred tools loaded by one conversation) changes only its own
// host's list.
//
// One stdio session:
//
//	ts, err := rt.Toolset("incident-triage")
//	if err != nil {
//		return err
//	}
//	return mcpfacade.Serve(ctx, ts, &mcp.StdioTransport{}, &mcpfacade.Options{
//		Agent:  "incident-triage",
//		Caller: heddle.Identity{Subject: "local-user"},
//		Watch:  rt.Watch,
//	})
//
// Over HTTP, NewHandler builds a session per initialize request, for the
// caller its front door put on the request's context (heddle.WithCaller).
package mcpfacade
