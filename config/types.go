package config

import (
	"reflect"
	"slices"
)

// Deployment is one environment's api.yaml, merged with its overlay and the
// HEDDLE_ environment. It says where things live and how to authenticate;
// it never says who may use them.
type Deployment struct {
	AI AI `koanf:"ai"`
	// Serve is the worker's front door (heddle serve).
	Serve Serve `koanf:"serve"`
	// MCP is heddle as an MCP server (heddle mcp).
	MCP MCP `koanf:"mcp"`
	// Audit is where the audit trail is written, if anywhere.
	Audit *Audit `koanf:"audit"`

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

// AI is the ai: section of api.yaml. Settings of the whole worker live
// here; each grant kind owns a section of its own (ai.mcp_servers,
// ai.sql_sources, …), which config keeps raw in Sections and the kind
// decodes itself.
type AI struct {
	// StartupTimeoutMS is the one budget for all of start-up. Default 10000.
	StartupTimeoutMS int `koanf:"startup_timeout_ms"`
	// RemoteClients says whether a remote client that will not open aborts
	// start-up ("required", the default) or is tolerated ("optional").
	RemoteClients string `koanf:"remote_clients"`
	// Pinning says what a tool that differs from heddle.lock once the
	// runtime runs does: "strict" (the default) withholds it, and a lazy
	// server whose listing drifted stays unavailable with
	// TOOL_DEFINITION_CHANGED; "warn" logs the drift and uses what the
	// server offers now. A drift found at start-up fails it either way.
	Pinning     string                 `koanf:"pinning"`
	AuthPlugins map[string]*AuthPlugin `koanf:"auth_plugins"`
	Secrets     Secrets                `koanf:"secrets"`

	// Sections holds every other key of ai: as written (after layering),
	// for the kinds that own them. The compiler reports a key no kind
	// owns as CONFIG_KEY_UNKNOWN.
	Sections map[string]any `koanf:",remain"`
}

// Section returns the raw subtree at ai.<name>: nil when the deployment has
// none, and ok false when it holds something other than a mapping.
func (d *Deployment) Section(name string) (raw map[string]any, ok bool) {
	v, present := d.AI.Sections[name]
	if !present || v == nil {
		return nil, true
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// Written reports whether the merged layers hold a value at path: a setting
// the operator wrote, as opposed to one left to its default.
func (d *Deployment) Written(path string) bool { return written(d.raw, path) }

// RemoteClients values.
const (
	RemoteClientsRequired = "required"
	RemoteClientsOptional = "optional"
)

// Pinning values.
const (
	PinningStrict = "strict"
	PinningWarn   = "warn"
)

// Defaults of the settings config owns.
const (
	DefaultStartupTimeoutMS = 10000
	DefaultToolTimeoutMS    = 25000
)

// Auth is an auth: block: a strategy kind and the settings it accepts.
// Settings keys ending in _ref must hold secret references.
type Auth struct {
	Kind     string         `koanf:"kind"`
	Settings map[string]any `koanf:",remain"`
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
	Kind string `koanf:"kind"`
	// Defer keeps the grant's tools out of the list the model is given: it
	// finds them with search_tools and adds them with load_tools. Default false.
	Defer    bool           `koanf:"defer"`
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
	// Limits bound the agent's calls in this worker: rates and calls at once.
	Limits []Limit `koanf:"limits"`
}

// Limit is one entry of policies.limits: either a rate (calls and per) or a
// bound on calls at once (concurrent).
type Limit struct {
	// Calls is how many calls are admitted per interval; with per.
	Calls int `koanf:"calls"`
	// Per is the interval of calls, a duration such as 1m, 30s or 1h.
	Per string `koanf:"per"`
	// Concurrent is how many calls may be in flight at once.
	Concurrent int `koanf:"concurrent"`
	// By is what the limit is counted for: caller, agent (default) or tool.
	By string `koanf:"by"`
	// Tools are globs scoping the entry to some tools; empty means every tool.
	Tools []string `koanf:"tools"`
}

// Rule is one CEL policy rule.
type Rule struct {
	When   string `koanf:"when"`
	Effect string `koanf:"effect"`
}

// AIKeys returns the keys of ai: that config itself owns, sorted; kinds own
// the others.
func AIKeys() []string {
	keys := knownKeys(reflect.TypeFor[AI](), nil)
	slices.Sort(keys)
	return keys
}
