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
	"strings"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/plan"
)

func init() { grants.Register("a2a", Kind{}) }

// Kind is the a2a kind.
type Kind struct{}

// CheckDeployment validates ai.a2a_agents.
func (Kind) CheckDeployment(env *grants.Env) diag.Diagnostics {
	var ds diag.Diagnostics
	d := env.Deployment
	for _, name := range config.SortedKeys(d.AI.A2AAgents) {
		a := d.AI.A2AAgents[name]
		if a == nil {
			a = &config.A2AAgent{}
		}
		p := config.Join("ai.a2a_agents", name)
		ads := grants.CheckURL(a.URL, diag.A2AURLInvalid, config.Join(p, "url"))
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
		pa := &plan.A2AAgent{
			Name:      name,
			URL:       a.URL,
			TimeoutMS: a.TimeoutMS,
			Required:  grants.Required(a.Required, d.AI.RemoteClients),
			GrantedTo: []string{},
		}
		if a.Auth != nil {
			pa.Auth = &plan.Auth{Kind: a.Auth.Kind, Settings: settings, Plugin: plugin}
		}
		env.Plan.A2AAgents[name] = pa
	}
	return ds
}

type grantSettings struct {
	Agent string `koanf:"agent"`
}

// Compile resolves one a2a grant.
func (Kind) Compile(env *grants.Env, art *config.Artifact, settings map[string]any, p string) (any, diag.Diagnostics) {
	var g grantSettings
	ds := config.DecodeStrict(settings, &g, p)
	declared := env.Deployment.AI.A2AAgents
	switch _, ok := declared[g.Agent]; {
	case g.Agent == "":
		ds = append(ds, diag.Errorf(diag.A2AAgentUnknown, p, "the grant names no agent"))
	case !ok && grants.Written(env.Deployment, "a2a_agents", g.Agent):
		return nil, ds
	case !ok:
		names := config.SortedKeys(declared)
		list := "none"
		if len(names) > 0 {
			list = strings.Join(names, ", ")
		}
		ds = append(ds, diag.Errorf(diag.A2AAgentUnknown, config.Join(p, "agent"),
			"remote agent %q is not declared in ai.a2a_agents", g.Agent).WithDetail("declared: %s", list))
	}
	if ds.HasErrors() {
		return nil, ds
	}
	if a := env.Plan.A2AAgents[g.Agent]; a != nil {
		a.GrantedTo = grants.AppendUnique(a.GrantedTo, art.Name)
		if a.TimeoutMS == art.Policies.ToolTimeoutMS {
			ds = append(ds, diag.Warnf(diag.TimeoutRace, "policies.tool_timeout_ms",
				"tool_timeout_ms equals remote agent %q's timeout_ms (%d ms): the two deadlines race", g.Agent, a.TimeoutMS))
		}
	}
	return &plan.A2AGrant{Agent: g.Agent}, ds
}
