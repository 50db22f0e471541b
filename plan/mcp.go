package plan

import "github.com/heddlehq/heddle/config/setting"

// MCP is heddle as an MCP server as compiled: the caller of a stdio
// session (heddle mcp), nil for an anonymous one.
type MCP struct {
	Identity *MCPIdentity `json:"identity,omitempty"`
}

// MCPIdentity is the deployment's mcp.identity, as written.
type MCPIdentity = setting.MCPIdentity
