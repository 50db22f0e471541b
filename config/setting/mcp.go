package setting

// MCP is the mcp: section of api.yaml: heddle as an MCP server, the facade
// `heddle mcp AGENT` serves over stdio and `heddle serve` at /mcp/{agent}.
type MCP struct {
	// Identity is the caller of a `heddle mcp` stdio session: policies see
	// it as caller, use cases read it back. A stdio session has no
	// credential of its own: the host that started the process is the
	// user's. Default: anonymous (no subject, roles or claims). An HTTP
	// session's caller is the one serve.auth authenticates.
	Identity *MCPIdentity `koanf:"identity" json:"identity,omitempty"`
}

// MCPIdentity is mcp.identity: one caller, as policies see it.
type MCPIdentity struct {
	// Subject identifies the caller (caller.subject).
	Subject string `koanf:"subject" json:"subject,omitempty"`
	// Roles are the caller's roles (caller.roles).
	Roles []string `koanf:"roles" json:"roles,omitempty"`
	// Claims are further facts about the caller (caller.claims).
	Claims map[string]string `koanf:"claims" json:"claims,omitempty"`
}
