// Package a2akind is the config half of the a2a capability kind: another agent,
// reached over the A2A protocol and exposed as one tool.
//
//	capabilities:
//	  - {kind: a2a, agent: triage}
//	ai:
//	  a2a_agents:
//	    triage:
//	      url: https://triage.internal.example.com
//	      auth: {kind: bearer, token_ref: ${secrets:/heddle/triage/token}}
package a2akind

import (
	"maps"
	"slices"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/plan"
)

// Kind is the config half of the a2a kind. It owns ai.a2a_agents.
type Kind struct{}

var _ grants.Kind = Kind{}

// Name is "a2a".
func (Kind) Name() string { return "a2a" }

// Section is "a2a_agents".
func (Kind) Section() string { return "a2a_agents" }

// Defaults.
const (
	// DefaultTimeoutMS is the wait for one call to a remote agent.
	DefaultTimeoutMS = 20000
	// MaxResultBytes caps an answer as an MCP server's result is capped.
	MaxResultBytes = 1 << 20
)

// AgentConfig is one entry of ai.a2a_agents as written.
type AgentConfig struct {
	URL       string       `koanf:"url"`
	Auth      *config.Auth `koanf:"auth"`
	TimeoutMS int          `koanf:"timeout_ms"`
	Required  *bool        `koanf:"required"`
	// Classification overrides the classification of the agent's tool
	// (not destructive, by default): destructive: true sends its calls
	// through approval.
	Classification *grants.ToolOverride `koanf:"classification"`
}

// Agents is the a2a kind's part of the plan, keyed by agent name.
type Agents map[string]*Agent

// Agent is one remote agent an a2a grant reaches.
type Agent struct {
	Name      string     `json:"-"`
	URL       string     `json:"url"`
	Auth      *plan.Auth `json:"auth,omitempty"`
	TimeoutMS int        `json:"timeout_ms"`
	// MaxResultBytes caps one answer.
	MaxResultBytes int      `json:"max_result_bytes"`
	Required       bool     `json:"required"`
	GrantedTo      []string `json:"granted_to"`
	// Classification is the operator's override of the tool's
	// classification, or nil.
	Classification *grants.ToolOverride `json:"classification,omitempty"`
}

// Grant is an a2a grant's plan spec: one remote agent, exposed as a tool.
type Grant struct {
	Agent string `json:"agent"`
}

// PlanAgents returns the remote agents of p, or nil when p has no a2a part.
func PlanAgents(p *plan.Plan) Agents {
	a, _ := p.Part("a2a").(Agents)
	return a
}

type configured struct {
	declared map[string]*AgentConfig
	agents   Agents
}

// Configure decodes ai.a2a_agents strictly, applies its defaults and
// validates every entry.
func (Kind) Configure(env *grants.Env, raw map[string]any) (grants.Configured, diag.Diagnostics) {
	c := &configured{declared: map[string]*AgentConfig{}, agents: Agents{}}
	ds := config.DecodeStrict(raw, &c.declared, "ai.a2a_agents")
	for _, name := range slices.Sorted(maps.Keys(c.declared)) {
		a := c.declared[name]
		if a == nil {
			a = &AgentConfig{}
			c.declared[name] = a
		}
		p := config.Join("ai.a2a_agents", name)
		ads := config.Positive(nil, env.Deployment, config.Join(p, "timeout_ms"), a.TimeoutMS)
		if a.TimeoutMS <= 0 {
			a.TimeoutMS = DefaultTimeoutMS
		}
		ads = append(ads, grants.CheckURL(a.URL, diag.A2AURLInvalid, config.Join(p, "url"))...)
		ads = append(ads, grants.CheckToolOverride(a.Classification, config.Join(p, "classification"))...)
		var settings map[string]any
		var plugin bool
		if a.Auth != nil {
			s, strat, cds := env.Auth.Check(a.Auth, config.Join(p, "auth"), "a2a")
			ads = append(ads, cds...)
			settings, plugin = s, strat.Plugin
		}
		ds = append(ds, ads...)
		if ads.HasErrors() {
			continue
		}
		pa := &Agent{
			Name:           name,
			URL:            a.URL,
			TimeoutMS:      a.TimeoutMS,
			MaxResultBytes: MaxResultBytes,
			Required:       grants.Required(a.Required, env.RemoteClients()),
			GrantedTo:      []string{},
			Classification: a.Classification,
		}
		if a.Auth != nil {
			pa.Auth = &plan.Auth{Kind: a.Auth.Kind, Settings: settings, Plugin: plugin}
		}
		c.agents[name] = pa
	}
	return c, ds
}

// Part returns the agents, written under "a2a_agents"; nothing when the
// deployment declares none.
func (c *configured) Part() (string, any, bool) {
	return "a2a_agents", c.agents, len(c.agents) > 0
}

type grantSettings struct {
	Agent string `koanf:"agent"`
}

// Compile resolves one a2a grant.
func (c *configured) Compile(env *grants.Env, art *config.Artifact, settings map[string]any, p string) (any, diag.Diagnostics) {
	var g grantSettings
	ds := config.DecodeStrict(settings, &g, p)
	declared := c.declared
	switch _, ok := declared[g.Agent]; {
	case g.Agent == "":
		ds = append(ds, diag.Errorf(diag.A2AAgentUnknown, p, "the grant names no agent"))
	case !ok && grants.Written(env.Deployment, "a2a_agents", g.Agent):
		return nil, ds
	case !ok:
		ds = append(ds, diag.Errorf(diag.A2AAgentUnknown, config.Join(p, "agent"),
			"remote agent %q is not declared in ai.a2a_agents", g.Agent).WithDetail("declared: %s", grants.NameList(slices.Sorted(maps.Keys(declared)))))
	}
	if ds.HasErrors() {
		return nil, ds
	}
	if a := c.agents[g.Agent]; a != nil {
		a.GrantedTo = grants.AppendUnique(a.GrantedTo, art.Name)
		if a.TimeoutMS == art.Policies.ToolTimeoutMS {
			ds = append(ds, diag.Warnf(diag.TimeoutRace, "policies.tool_timeout_ms",
				"tool_timeout_ms equals remote agent %q's timeout_ms (%d ms): the two deadlines race", g.Agent, a.TimeoutMS))
		}
	}
	return &Grant{Agent: g.Agent}, ds
}

// GrantSettings and SectionEntry document the types the kind decodes.
func (Kind) GrantSettings() any { return grantSettings{} }
func (Kind) SectionEntry() any  { return AgentConfig{} }

var _ grants.Documented = Kind{}
