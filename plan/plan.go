// Package plan holds heddle's compiled plan: every artifact resolved against
// one deployment. A plan is pure data — no connections, no secret values
// (secrets appear as references such as ${secrets:/heddle/catalog/token}) —
// and its JSON form is stable and diffable, so that
//
//	heddle plan --env staging > a.json
//	heddle plan --env prod    > b.json
//	diff a.json b.json
//
// shows exactly where two environments differ.
//
// The compiler builds plans; the runtime opens them. Nothing in this package
// touches the network or the file system.
package plan

import (
	"github.com/heddlehq/heddle/config"
)

// Version is the plan format's version, recorded in every plan.
const Version = 1

// Plan is the compiled result. All maps are keyed by name and print sorted.
type Plan struct {
	Version int    `json:"version"`
	Env     string `json:"env,omitempty"`
	// Sources are the deployment layers the plan was compiled from.
	Sources []string `json:"sources"`

	Startup Startup `json:"startup"`

	// Servers has one connection spec per declared MCP server; GrantedTo
	// says which agents grant it (the runtime opens only granted ones, and
	// those application code declares).
	Servers map[string]*Server `json:"servers"`
	// SQLSources has each declared SQL source.
	SQLSources map[string]*SQLSource `json:"sql_sources,omitempty"`
	// A2AAgents has each declared remote agent.
	A2AAgents map[string]*A2AAgent `json:"a2a_agents,omitempty"`
	// AuthPlugins are the out-of-process strategies servers use.
	AuthPlugins map[string]*AuthPlugin `json:"auth_plugins,omitempty"`
	// Secrets says how references resolve.
	Secrets Secrets `json:"secrets"`

	Agents map[string]*Agent `json:"agents"`
}

// Startup holds start-up settings.
type Startup struct {
	TimeoutMS     int    `json:"timeout_ms"`
	RemoteClients string `json:"remote_clients"`
}

// Secrets says where ${secrets:…} references are read from.
type Secrets struct {
	Dir string `json:"dir,omitempty"`
}

// Server is one MCP server's connection spec: everything the runtime needs
// to open one shared client for it.
type Server struct {
	Name      string `json:"-"`
	Transport string `json:"transport"`
	URL       string `json:"url,omitempty"`
	// ToolPrefix is the server name as it prefixes qualified tool names
	// (server__tool): the name with characters outside [A-Za-z0-9_-] made _.
	ToolPrefix      string `json:"tool_prefix"`
	Auth            *Auth  `json:"auth,omitempty"`
	TimeoutMS       int    `json:"timeout_ms"`
	Required        bool   `json:"required"`
	ProtocolVersion string `json:"protocol_version"`
	MaxResultBytes  int    `json:"max_result_bytes"`

	ReadOnlyTools    []string `json:"read_only_tools,omitempty"`
	IdempotentTools  []string `json:"idempotent_tools,omitempty"`
	DestructiveTools []string `json:"destructive_tools,omitempty"`

	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]EnvVar `json:"env,omitempty"`
	Dir     string            `json:"dir,omitempty"`

	// GrantedTo lists the agents that grant this server.
	GrantedTo []string `json:"granted_to"`
}

// EnvVar is one variable of a stdio child's environment: a reference, or a
// literal shown only as a hash so the plan stays secret-free.
type EnvVar struct {
	Ref *config.Ref `json:"ref,omitempty"`
	// LiteralSHA256 is the first 12 hex digits of the literal's SHA-256.
	LiteralSHA256 string `json:"literal_sha256,omitempty"`
	// Literal is the value itself; it is never printed.
	Literal string `json:"-"`
}

// Auth is a server's or remote agent's authentication strategy. Settings
// keep references as references and plain settings (URLs, scopes) as given.
type Auth struct {
	Kind     string         `json:"kind"`
	Settings map[string]any `json:"settings,omitempty"`
	// Plugin is set when Kind names an auth plugin.
	Plugin bool `json:"plugin,omitempty"`
}

// AuthPlugin is an out-of-process auth strategy binary.
type AuthPlugin struct {
	Command string            `json:"command"`
	Args    []string          `json:"args,omitempty"`
	SHA256  string            `json:"sha256"`
	Env     map[string]EnvVar `json:"env,omitempty"`
}

// SQLSource is one database an sql grant reads.
type SQLSource struct {
	Name       string                   `json:"-"`
	Driver     string                   `json:"driver"`
	Path       string                   `json:"path,omitempty"`
	DSNRef     *config.Ref              `json:"dsn_ref,omitempty"`
	TimeoutMS  int                      `json:"timeout_ms"`
	MaxRows    int                      `json:"max_rows"`
	MaxBytes   int                      `json:"max_bytes"`
	Statements map[string]*SQLStatement `json:"statements"`
	GrantedTo  []string                 `json:"granted_to"`
}

// SQLStatement is one named, parameterised statement.
type SQLStatement struct {
	Description string `json:"description,omitempty"`
	SQL         string `json:"sql"`
	// Params are in the order they appear in the SQL text.
	Params []SQLParam `json:"params,omitempty"`
}

// SQLParam is one statement parameter.
type SQLParam struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	From        string `json:"from,omitempty"`
	Required    bool   `json:"required"`
}

// A2AAgent is one remote agent an a2a grant reaches.
type A2AAgent struct {
	Name      string   `json:"-"`
	URL       string   `json:"url"`
	Auth      *Auth    `json:"auth,omitempty"`
	TimeoutMS int      `json:"timeout_ms"`
	Required  bool     `json:"required"`
	GrantedTo []string `json:"granted_to"`
}

// Agent is one compiled artifact.
type Agent struct {
	Name        string   `json:"-"`
	File        string   `json:"file"`
	Description string   `json:"description,omitempty"`
	Grants      []Grant  `json:"grants"`
	Policies    Policies `json:"policies"`
}

// Grant is one resolved capability. Spec holds the kind's own settings
// (an *MCPGrant, *UsecaseGrant, *SQLGrant or *A2AGrant for the built-in
// kinds).
type Grant struct {
	Kind string `json:"kind"`
	Spec any    `json:"spec"`
}

// MCPGrant is an mcp grant: one server, filtered by globs.
type MCPGrant struct {
	Server  string   `json:"server"`
	Include []string `json:"include,omitempty"` // empty means every tool
	Exclude []string `json:"exclude,omitempty"` // applied after include
}

// UsecaseGrant is a usecase grant: operations of the application itself.
type UsecaseGrant struct {
	Keys []string `json:"keys"`
}

// SQLGrant is an sql grant: named statements of one source, and optionally
// free-form read-only queries.
type SQLGrant struct {
	Source     string   `json:"source"`
	Statements []string `json:"statements,omitempty"`
	Query      bool     `json:"query"`
}

// A2AGrant is an a2a grant: one remote agent, exposed as a tool.
type A2AGrant struct {
	Agent string `json:"agent"`
}

// Policies are an agent's compiled call-time rules.
type Policies struct {
	ToolTimeoutMS int      `json:"tool_timeout_ms"`
	Approval      string   `json:"approval"`
	DeniedTools   []string `json:"denied_tools,omitempty"`
	Rules         []Rule   `json:"rules,omitempty"`
}

// Rule is one CEL rule, type-checked at compile time.
type Rule struct {
	When   string `json:"when"`
	Effect string `json:"effect"`
}
