package config

import (
	"github.com/heddlehq/heddle/config/setting"
	"github.com/heddlehq/heddle/diag"
)

// Positive reports, into ds, a setting at path that was written but is not
// a positive whole number; an unwritten one gets its default. Kinds use it
// for the numeric settings of their sections.
func Positive(ds diag.Diagnostics, d *Deployment, path string, v int) diag.Diagnostics {
	return positive(ds, d.raw, path, v)
}

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
	ds := positive(nil, d.raw, "ai.startup_timeout_ms", d.AI.StartupTimeoutMS)
	for _, l := range limitSettings(&d.Serve.Limits) {
		ds = positive(ds, d.raw, l.path, *l.v)
	}
	if a := d.Serve.Auth; a != nil {
		ds = positive(ds, d.raw, "serve.auth.clock_skew_ms", a.ClockSkewMS)
	}
	return ds
}

// applyDefaults fills in every unset setting config owns with its
// documented default; kinds default their own sections.
func (d *Deployment) applyDefaults() {
	ai := &d.AI
	if ai.StartupTimeoutMS <= 0 {
		ai.StartupTimeoutMS = DefaultStartupTimeoutMS
	}
	if ai.RemoteClients == "" {
		ai.RemoteClients = RemoteClientsRequired
	}
	if ai.Pinning == "" {
		ai.Pinning = PinningStrict
	}
	for _, l := range limitSettings(&d.Serve.Limits) {
		if *l.v <= 0 {
			*l.v = l.def
		}
	}
	if a := d.Serve.Auth; a != nil {
		if a.Kind == ServeAuthJWT && a.ClockSkewMS <= 0 {
			a.ClockSkewMS = DefaultServeClockSkewMS
		}
		if a.Kind == ServeAuthJWT && len(a.Algorithms) == 0 {
			a.Algorithms = []string{"RS256"}
		}
		if a.Kind == ServeAuthJWT && a.Claims["subject"] == "" {
			if a.Claims == nil {
				a.Claims = map[string]string{}
			}
			a.Claims["subject"] = "sub"
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
	for i := range a.Policies.Limits {
		if a.Policies.Limits[i].By == "" {
			a.Policies.Limits[i].By = LimitByAgent
		}
	}
	return ds
}

// Values of policies.limits[i].by: what a limit is counted for.
const (
	LimitByCaller = setting.LimitByCaller
	LimitByAgent  = setting.LimitByAgent
	LimitByTool   = setting.LimitByTool
)

// Values of policies.approval: what happens to a destructive tool.
const (
	ApprovalAsk   = setting.ApprovalAsk
	ApprovalAllow = setting.ApprovalAllow
	ApprovalDeny  = setting.ApprovalDeny
)
