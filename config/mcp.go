package config

import "github.com/heddlehq/heddle/config/setting"

// The mcp: section of api.yaml; see [setting.MCP].
type (
	MCP         = setting.MCP
	MCPIdentity = setting.MCPIdentity
)
