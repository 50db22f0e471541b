package config

import (
	"github.com/heddlehq/heddle/diag"
)

// positive reports a setting that was written but is not a positive number.
func positive(ds diag.Diagnostics, raw map[string]any, path string, v int) diag.Diagnostics {
	if v <= 0 && written(raw, path) {
		ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, path, "must be a positive whole number").
			WithDetail("leave the key out to use the default"))
	}
	return ds
}

// checkValues reports numeric settings that were written as zero or less;
// unwritten ones get defaults.
func (d *Deployment) checkValues() diag.Diagnostics {
	var ds diag.Diagnostics
	ix := d.raw
	ds = positive(ds, ix, "ai.startup_timeout_ms", d.AI.StartupTimeoutMS)
	for _, name := range sortedKeys(d.AI.MCPServers) {
		s := d.AI.MCPServers[name]
		if s == nil {
			continue
		}
		p := Join("ai.mcp_servers", name)
		ds = positive(ds, ix, Join(p, "timeout_ms"), s.TimeoutMS)
		ds = positive(ds, ix, Join(p, "max_result_bytes"), s.MaxResultBytes)
	}
	for _, name := range sortedKeys(d.AI.A2AAgents) {
		if a := d.AI.A2AAgents[name]; a != nil {
			ds = positive(ds, ix, Join("ai.a2a_agents", name, "timeout_ms"), a.TimeoutMS)
		}
	}
	for _, name := range sortedKeys(d.AI.SQLSources) {
		s := d.AI.SQLSources[name]
		if s == nil {
			continue
		}
		p := Join("ai.sql_sources", name)
		ds = positive(ds, ix, Join(p, "timeout_ms"), s.TimeoutMS)
		ds = positive(ds, ix, Join(p, "max_rows"), s.MaxRows)
		ds = positive(ds, ix, Join(p, "max_bytes"), s.MaxBytes)
	}
	return ds
}

// applyDefaults fills in every unset setting with its documented default.
func (d *Deployment) applyDefaults() {
	ai := &d.AI
	if ai.StartupTimeoutMS <= 0 {
		ai.StartupTimeoutMS = DefaultStartupTimeoutMS
	}
	if ai.RemoteClients == "" {
		ai.RemoteClients = RemoteClientsRequired
	}
	for _, s := range ai.MCPServers {
		if s == nil {
			continue
		}
		if s.Transport == "" {
			s.Transport = TransportHTTP
		}
		if s.TimeoutMS <= 0 {
			s.TimeoutMS = DefaultServerTimeoutMS
		}
		if s.MaxResultBytes <= 0 {
			s.MaxResultBytes = DefaultMaxResultBytes
		}
		if s.ProtocolVersion == "" {
			s.ProtocolVersion = "auto"
		}
	}
	for _, a := range ai.A2AAgents {
		if a != nil && a.TimeoutMS <= 0 {
			a.TimeoutMS = DefaultA2ATimeoutMS
		}
	}
	for _, s := range ai.SQLSources {
		if s == nil {
			continue
		}
		if s.TimeoutMS <= 0 {
			s.TimeoutMS = DefaultSQLTimeoutMS
		}
		if s.MaxRows <= 0 {
			s.MaxRows = DefaultSQLMaxRows
		}
		if s.MaxBytes <= 0 {
			s.MaxBytes = DefaultSQLMaxBytes
		}
	}
}

// applyDefaults fills in an artifact's unset policies.
func (a *Artifact) applyDefaults() diag.Diagnostics {
	ds := positive(nil, a.raw, "policies.tool_timeout_ms", a.Policies.ToolTimeoutMS)
	if a.Policies.ToolTimeoutMS <= 0 {
		a.Policies.ToolTimeoutMS = DefaultToolTimeoutMS
	}
	if a.Policies.Approval == "" {
		a.Policies.Approval = ApprovalAsk
	}
	return ds
}

// Approval values.
const (
	ApprovalAsk   = "ask"
	ApprovalAllow = "allow"
	ApprovalDeny  = "deny"
)
