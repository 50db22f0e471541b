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
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/heddlehq/heddle/config/setting"
)

// Version is the plan format's version, recorded in every plan.
const Version = 1

// Plan is the compiled result. All maps are keyed by name and print sorted.
//
// What the deployment declares for each grant kind (MCP servers, SQL
// sources, remote agents, …) is that kind's Part, of the kind's own type:
// this package names no kind. A plan is safe for concurrent reads; nothing
// changes it once Compile returns it.
type Plan struct {
	Version int    `json:"version"`
	Env     string `json:"env,omitempty"`
	// Sources are the deployment layers the plan was compiled from.
	Sources []string `json:"sources"`

	Startup Startup `json:"startup"`

	// Parts are the kinds' parts, in the order of the set of kinds the
	// plan was compiled with. Each is written in the plan's JSON under its
	// own key, between startup and auth_plugins.
	Parts []Part `json:"-"`

	// AuthPlugins are the out-of-process strategies servers use.
	AuthPlugins map[string]*AuthPlugin `json:"auth_plugins,omitempty"`
	// Secrets says how references resolve.
	Secrets Secrets `json:"secrets"`
	// Serve is the worker's front door (heddle serve).
	Serve Serve `json:"serve"`
	// MCP is heddle as an MCP server (heddle mcp).
	MCP MCP `json:"mcp"`
	// Audit is where the audit trail is written; nil for none.
	Audit *Audit `json:"audit,omitempty"`

	Agents map[string]*Agent `json:"agents"`
}

// Part is one grant kind's part of a plan: the resources the deployment
// declares for it, resolved. Value is the kind's own type — pure data,
// secret-free, with stable JSON — and is written in the plan's JSON under
// Key.
type Part struct {
	Kind  string
	Key   string
	Value any
}

// Part returns the value of kind's part, or nil when the plan has none.
func (p *Plan) Part(kind string) any {
	for _, pt := range p.Parts {
		if pt.Kind == kind {
			return pt.Value
		}
	}
	return nil
}

// MarshalJSON writes the plan with each kind's part under its key.
func (p *Plan) MarshalJSON() ([]byte, error) {
	type fields struct {
		Version int      `json:"version"`
		Env     string   `json:"env,omitempty"`
		Sources []string `json:"sources"`
		Startup Startup  `json:"startup"`
	}
	type rest struct {
		AuthPlugins map[string]*AuthPlugin `json:"auth_plugins,omitempty"`
		Secrets     Secrets                `json:"secrets"`
		Serve       Serve                  `json:"serve"`
		MCP         *MCP                   `json:"mcp,omitempty"`
		Audit       *Audit                 `json:"audit,omitempty"`
		Agents      map[string]*Agent      `json:"agents"`
	}
	head, err := json.Marshal(fields{p.Version, p.Env, p.Sources, p.Startup})
	if err != nil {
		return nil, err
	}
	var mcp *MCP // written only when set, so that plans without it read as before
	if p.MCP.Identity != nil {
		mcp = &p.MCP
	}
	tail, err := json.Marshal(rest{p.AuthPlugins, p.Secrets, p.Serve, mcp, p.Audit, p.Agents})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(head[:len(head)-1])
	for _, pt := range p.Parts {
		v, err := json.Marshal(pt.Value)
		if err != nil {
			return nil, fmt.Errorf("plan part %s: %w", pt.Kind, err)
		}
		key, _ := json.Marshal(pt.Key)
		b.WriteByte(',')
		b.Write(key)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte(',')
	b.Write(tail[1:])
	return b.Bytes(), nil
}

// Startup holds start-up settings.
type Startup struct {
	TimeoutMS     int    `json:"timeout_ms"`
	RemoteClients string `json:"remote_clients"`
	// Pinning is ai.pinning: strict or warn.
	Pinning string `json:"pinning"`
}

// Secrets says where ${secrets:…} references are read from.
type Secrets struct {
	Dir string `json:"dir,omitempty"`
}

// EnvVar is one variable of a child process's environment (a stdio server,
// an auth plugin): a reference, or a literal shown only as a hash so the
// plan stays secret-free.
type EnvVar struct {
	Ref *setting.Ref `json:"ref,omitempty"`
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

// Agent is one compiled artifact.
type Agent struct {
	Name        string   `json:"-"`
	File        string   `json:"file"`
	Description string   `json:"description,omitempty"`
	Grants      []Grant  `json:"grants"`
	Policies    Policies `json:"policies"`
}

// Grant is one resolved capability. Spec holds the kind's own settings, of
// the kind's own type.
type Grant struct {
	Kind string `json:"kind"`
	// Defer is the grant's defer: its tools are reached through
	// search_tools and load_tools rather than listed.
	Defer bool `json:"defer,omitempty"`
	Spec  any  `json:"spec"`
}

// Policies are an agent's compiled call-time rules.
type Policies struct {
	ToolTimeoutMS int      `json:"tool_timeout_ms"`
	Approval      string   `json:"approval"`
	DeniedTools   []string `json:"denied_tools,omitempty"`
	Rules         []Rule   `json:"rules,omitempty"`
	Limits        []Limit  `json:"limits,omitempty"`
}

// Limit is one entry of policies.limits, counted per worker: a rate (Calls
// per Per, a Go duration such as "1m") or a bound on calls at once
// (Concurrent), kept for each caller, for the agent or for each tool (By),
// over every tool of the agent or those matching Tools.
type Limit struct {
	Calls      int      `json:"calls,omitempty"`
	Per        string   `json:"per,omitempty"`
	Concurrent int      `json:"concurrent,omitempty"`
	By         string   `json:"by"`
	Tools      []string `json:"tools,omitempty"`
}

// Rule is one CEL rule, type-checked at compile time.
type Rule struct {
	When   string `json:"when"`
	Effect string `json:"effect"`
}
