package mcpkind

import (
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/plan"
)

// ServerConfig is one entry of ai.mcp_servers as written: how to reach one
// MCP server.
type ServerConfig struct {
	// Transport is http (Streamable HTTP), sse or stdio. Left out, as MCP
	// hosts write their entries, it is stdio for an entry with command and
	// http for one with url.
	Transport string `koanf:"transport"`
	// URL is the endpoint for http and sse.
	URL string `koanf:"url"`
	// HeadersRef is the static-header shorthand: a reference to a "Name=value" payload.
	HeadersRef *config.Ref `koanf:"headers_ref"`
	// Auth selects an authentication strategy and its settings.
	Auth *config.Auth `koanf:"auth"`
	// Headers are set on every request to an http or sse server: header
	// name to a plain value or a secret reference. A credential's header
	// (Authorization, Proxy-Authorization, Cookie, *-Key, *-Token,
	// *-Secret) must be a reference. Beside headers_ref or auth, the
	// strategy's headers win for one name.
	Headers map[string]string `koanf:"headers"`
	// TimeoutMS is the transport wait for one call. Default 20000.
	TimeoutMS int `koanf:"timeout_ms"`
	// Required overrides ai.remote_clients for this server when set.
	Required *bool `koanf:"required"`
	// ProtocolVersion pins the MCP protocol revision; "auto" (default) negotiates.
	ProtocolVersion string `koanf:"protocol_version"`
	// Connect is when the server is connected: eager (the default) at
	// start-up, or lazy on the first call, its tools offered from
	// heddle.lock until then.
	Connect string `koanf:"connect"`
	// MaxResultBytes caps one call's result: a larger one is cut. Four times
	// it, at least 4 MiB, is the hard limit past which a message from the
	// server is refused as it is read. Default 1 MiB.
	MaxResultBytes int `koanf:"max_result_bytes"`
	// MaxConcurrent bounds the calls in flight to the server at once, over
	// every agent and use case of the worker; a call past it is refused
	// with TOOL_RATE_LIMITED. Default: no bound.
	MaxConcurrent int `koanf:"max_concurrent"`
	// ReadOnlyTools and IdempotentTools are operator overrides (globs) of the
	// server's annotations: calls to these tools may be re-sent after a reconnect.
	ReadOnlyTools   []string `koanf:"read_only_tools"`
	IdempotentTools []string `koanf:"idempotent_tools"`
	// DestructiveTools marks tools destructive whatever the server says.
	DestructiveTools []string `koanf:"destructive_tools"`
	// TrustAnnotations false ignores the server's annotations: every tool
	// is destructive, neither read-only nor idempotent, unless an override
	// says otherwise. Default true.
	TrustAnnotations *bool `koanf:"trust_annotations"`
	// Screen is what a tool whose definition holds hidden Unicode or
	// instructions aimed at the model (TOOL_DESCRIPTOR_SUSPICIOUS) does:
	// warn (the default) logs it and offers the tool, its findings in
	// tool.flags for rules; strict withholds it.
	Screen string `koanf:"screen"`
	// Tools overrides the classification of the tools a name or glob
	// matches: the exact name's entry, else the longest matching glob's.
	// It decides over read_only_tools, idempotent_tools and
	// destructive_tools.
	Tools map[string]*grants.ToolOverride `koanf:"tools"`

	// Command, Args, Env and Dir configure a stdio server.
	Command string                      `koanf:"command"`
	Args    []string                    `koanf:"args"`
	Env     map[string]*config.EnvValue `koanf:"env"`
	Dir     string                      `koanf:"dir"`
}

// Servers is the mcp kind's part of the plan: one connection spec per
// valid declared server, keyed by name.
type Servers map[string]*Server

// Server is one MCP server's connection spec: everything the runtime needs
// to open one shared client for it.
type Server struct {
	Name      string `json:"-"`
	Transport string `json:"transport"`
	URL       string `json:"url,omitempty"`
	// ToolPrefix is the server name as it prefixes qualified tool names
	// (server__tool): the name with characters outside [A-Za-z0-9_-] made _.
	ToolPrefix string     `json:"tool_prefix"`
	Auth       *plan.Auth `json:"auth,omitempty"`
	// Headers are set on every request, by canonical name; the strategy's
	// headers win over them.
	Headers         map[string]Header `json:"headers,omitempty"`
	TimeoutMS       int               `json:"timeout_ms"`
	Required        bool              `json:"required"`
	ProtocolVersion string            `json:"protocol_version"`
	MaxResultBytes  int               `json:"max_result_bytes"`
	// MaxConcurrent bounds the calls in flight at once; 0 is no bound.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// Connect is eager or lazy (see ServerConfig).
	Connect string `json:"connect"`

	ReadOnlyTools    []string `json:"read_only_tools,omitempty"`
	IdempotentTools  []string `json:"idempotent_tools,omitempty"`
	DestructiveTools []string `json:"destructive_tools,omitempty"`
	// Untrusted is trust_annotations: false.
	Untrusted bool `json:"untrusted,omitempty"`
	// StrictScreen is screen: strict: a tool with hidden Unicode or
	// instructions in its definition is withheld.
	StrictScreen bool                 `json:"strict_screen,omitempty"`
	Tools        grants.ToolOverrides `json:"tools,omitempty"`

	Command string                 `json:"command,omitempty"`
	Args    []string               `json:"args,omitempty"`
	Env     map[string]plan.EnvVar `json:"env,omitempty"`
	Dir     string                 `json:"dir,omitempty"`

	// GrantedTo lists the agents that grant this server.
	GrantedTo []string `json:"granted_to"`
}

// Grant is an mcp grant's plan spec: one server, filtered by globs.
type Grant struct {
	Server  string   `json:"server"`
	Include []string `json:"include,omitempty"` // empty means every tool
	Exclude []string `json:"exclude,omitempty"` // applied after include
}

// PlanServers returns the servers of p, or nil when p has no mcp part.
func PlanServers(p *plan.Plan) Servers {
	s, _ := p.Part("mcp").(Servers)
	return s
}

// PlanPart makes the mcp part of a plan from servers, for plans built by
// hand (tests, programs that open one server without a configuration).
func PlanPart(servers Servers) plan.Part {
	return plan.Part{Kind: "mcp", Key: "servers", Value: servers}
}
