package config

// Deployment is one environment's api.yaml, merged with its overlay and the
// HEDDLE_ environment. It says where things live and how to authenticate;
// it never says who may use them.
type Deployment struct {
	AI AI `koanf:"ai"`

	// Sources lists the layers the deployment was merged from, in order
	// (file names, and "env" when HEDDLE_ variables were applied).
	Sources []string `koanf:"-"`
	// Env is the overlay name given with --env, or "".
	Env string `koanf:"-"`
	// Index locates config paths in the layer that last set them.
	Index *Index         `koanf:"-"`
	raw   map[string]any `koanf:"-"` // the merged layers, for written()

	// Incomplete is set when a layer could not be read or parsed, so that
	// the compiler does not report every grant as naming unknown servers.
	Incomplete bool `koanf:"-"`
}

// AI is the ai: section of api.yaml.
type AI struct {
	// StartupTimeoutMS is the one budget for all of start-up. Default 10000.
	StartupTimeoutMS int `koanf:"startup_timeout_ms"`
	// RemoteClients says whether a remote client that will not open aborts
	// start-up ("required", the default) or is tolerated ("optional").
	RemoteClients string                 `koanf:"remote_clients"`
	MCPServers    map[string]*MCPServer  `koanf:"mcp_servers"`
	A2AAgents     map[string]*A2AAgent   `koanf:"a2a_agents"`
	SQLSources    map[string]*SQLSource  `koanf:"sql_sources"`
	AuthPlugins   map[string]*AuthPlugin `koanf:"auth_plugins"`
	Secrets       Secrets                `koanf:"secrets"`
}

// Transport names.
const (
	TransportHTTP  = "http"
	TransportSSE   = "sse"
	TransportStdio = "stdio"
)

// RemoteClients values.
const (
	RemoteClientsRequired = "required"
	RemoteClientsOptional = "optional"
)

// Defaults.
const (
	DefaultStartupTimeoutMS = 10000
	DefaultServerTimeoutMS  = 20000
	DefaultToolTimeoutMS    = 25000
	DefaultMaxResultBytes   = 1 << 20
	DefaultSQLTimeoutMS     = 5000
	DefaultSQLMaxRows       = 1000
	DefaultSQLMaxBytes      = 1 << 20
	DefaultA2ATimeoutMS     = 20000
)

// MCPServer is one entry of ai.mcp_servers: how to reach one MCP server.
type MCPServer struct {
	// Transport is http (Streamable HTTP, the default), sse or stdio.
	Transport string `koanf:"transport"`
	// URL is the endpoint for http and sse.
	URL string `koanf:"url"`
	// HeadersRef is the static-header shorthand: a reference to a "Name=value" payload.
	HeadersRef *Ref `koanf:"headers_ref"`
	// Auth selects an authentication strategy and its settings.
	Auth *Auth `koanf:"auth"`
	// TimeoutMS is the transport wait for one call. Default 20000.
	TimeoutMS int `koanf:"timeout_ms"`
	// Required overrides ai.remote_clients for this server when set.
	Required *bool `koanf:"required"`
	// ProtocolVersion pins the MCP protocol revision; "auto" (default) negotiates.
	ProtocolVersion string `koanf:"protocol_version"`
	// MaxResultBytes caps one call's result. Default 1 MiB.
	MaxResultBytes int `koanf:"max_result_bytes"`
	// ReadOnlyTools and IdempotentTools are operator overrides (globs) of the
	// server's annotations: calls to these tools may be re-sent after a reconnect.
	ReadOnlyTools   []string `koanf:"read_only_tools"`
	IdempotentTools []string `koanf:"idempotent_tools"`
	// DestructiveTools marks tools destructive whatever the server says.
	DestructiveTools []string `koanf:"destructive_tools"`

	// Command, Args, Env and Dir configure a stdio server.
	Command string               `koanf:"command"`
	Args    []string             `koanf:"args"`
	Env     map[string]*EnvValue `koanf:"env"`
	Dir     string               `koanf:"dir"`
}

// Auth is an auth: block: a strategy kind and the settings it accepts.
// Settings keys ending in _ref must hold secret references.
type Auth struct {
	Kind     string         `koanf:"kind"`
	Settings map[string]any `koanf:",remain"`
}

// A2AAgent is one entry of ai.a2a_agents.
type A2AAgent struct {
	URL       string `koanf:"url"`
	Auth      *Auth  `koanf:"auth"`
	TimeoutMS int    `koanf:"timeout_ms"`
	Required  *bool  `koanf:"required"`
}

// SQLSource is one entry of ai.sql_sources.
type SQLSource struct {
	// Driver is sqlite or postgres.
	Driver string `koanf:"driver"`
	// Path is the SQLite database file (opened read-only).
	Path string `koanf:"path"`
	// DSNRef references the PostgreSQL connection string.
	DSNRef     *Ref                     `koanf:"dsn_ref"`
	TimeoutMS  int                      `koanf:"timeout_ms"`
	MaxRows    int                      `koanf:"max_rows"`
	MaxBytes   int                      `koanf:"max_bytes"`
	Statements map[string]*SQLStatement `koanf:"statements"`
}

// SQLStatement is a named, parameterised, read-only statement.
type SQLStatement struct {
	Description string               `koanf:"description"`
	SQL         string               `koanf:"sql"`
	Params      map[string]*SQLParam `koanf:"params"`
}

// SQLParam is one parameter of a statement.
type SQLParam struct {
	// Type is string, integer, number or boolean.
	Type        string `koanf:"type"`
	Description string `koanf:"description"`
	// From binds the value from the caller ("caller.subject", "caller.claims.NAME")
	// instead of from the model; such a parameter is not part of the tool's input.
	From     string `koanf:"from"`
	Required *bool  `koanf:"required"`
}

// AuthPlugin declares an out-of-process auth strategy.
type AuthPlugin struct {
	Command string               `koanf:"command"`
	Args    []string             `koanf:"args"`
	SHA256  string               `koanf:"sha256"`
	Env     map[string]*EnvValue `koanf:"env"`
}

// Secrets configures secret resolution.
type Secrets struct {
	// Dir is where ${secrets:/a/b} references are read from (<dir>/a/b).
	Dir string `koanf:"dir"`
}

// Artifact is one agents/<name>/agent.yaml: what one agent may use.
type Artifact struct {
	Name         string       `koanf:"name"`
	Description  string       `koanf:"description"`
	Capabilities []Capability `koanf:"capabilities"`
	Policies     Policies     `koanf:"policies"`

	// File is the artifact's path; Index locates paths within it.
	File  string         `koanf:"-"`
	Index *Index         `koanf:"-"`
	raw   map[string]any `koanf:"-"`
}

// Capability is one grant as written: its kind and the kind's own settings,
// which the kind decodes strictly.
type Capability struct {
	Kind     string         `koanf:"kind"`
	Settings map[string]any `koanf:",remain"`
}

// Policies are an agent's call-time rules.
type Policies struct {
	// ToolTimeoutMS is the supervisor's deadline for one call. Default 25000.
	ToolTimeoutMS int `koanf:"tool_timeout_ms"`
	// Approval is what happens to destructive tools: ask (default), allow or deny.
	Approval string `koanf:"approval"`
	// DeniedTools are globs over tool names the agent may never call.
	DeniedTools []string `koanf:"denied_tools"`
	Rules       []Rule   `koanf:"rules"`
}

// Rule is one CEL policy rule.
type Rule struct {
	When   string `koanf:"when"`
	Effect string `koanf:"effect"`
}
