// Package compile turns configuration into a plan: every artifact resolved
// against one deployment, fail-closed. It is pure — no network, no secret
// values, no live half of anything — so `heddle check` runs anywhere, and it
// gathers every problem in one run rather than stopping at the first.
//
//	cfg, ds := config.Load(config.Options{Env: "staging", Environ: os.Environ()})
//	p, cds := compile.Compile(compile.Input{Config: cfg})
//	ds = append(ds, cds...)
//	if ds.HasErrors() { … } // p is nil: a plan is never partial
//
// Kinds of grants are looked up in the grants registry; each validates its
// own part of the deployment and resolves its own grants.
package compile

import (
	"regexp"
	"strings"

	"github.com/heddlehq/heddle/auth"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/policy"

	// The built-in kinds register themselves.
	_ "github.com/heddlehq/heddle/grants/a2akind"
	mcpkind "github.com/heddlehq/heddle/grants/mcpkind"
	_ "github.com/heddlehq/heddle/grants/sqlkind"
	_ "github.com/heddlehq/heddle/grants/usecasekind"
)

// Input is what Compile reads.
type Input struct {
	// Config is the loaded deployment and artifacts.
	Config *config.Config
	// Usecases are the keys of the operations the application registered.
	Usecases []string
	// Auth is the strategy registry; nil means auth.Default().
	Auth *auth.Registry
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Compile resolves in.Config into a plan. It returns every diagnostic it
// finds, located and sorted, and a nil plan when any of them is an error.
func Compile(in Input) (*plan.Plan, diag.Diagnostics) {
	dep := in.Config.Deployment
	if dep == nil {
		dep = &config.Deployment{Index: &config.Index{}, Incomplete: true}
	}
	reg := in.Auth
	if reg == nil {
		reg = auth.Default()
	}
	var ds diag.Diagnostics

	// The deployment.
	var dds diag.Diagnostics
	if rc := dep.AI.RemoteClients; rc != config.RemoteClientsRequired && rc != config.RemoteClientsOptional {
		dds = append(dds, diag.Errorf(diag.RemoteClientsUnknown, "ai.remote_clients",
			"unknown value: want required or optional"))
	}
	dds = append(dds, checkPlugins(dep.AI.AuthPlugins)...)
	reg, pds := reg.WithPlugins(dep.AI.AuthPlugins)
	dds = append(dds, pds...)

	p := &plan.Plan{
		Version:     plan.Version,
		Env:         dep.Env,
		Sources:     dep.Sources,
		Startup:     plan.Startup{TimeoutMS: dep.AI.StartupTimeoutMS, RemoteClients: dep.AI.RemoteClients},
		Servers:     map[string]*plan.Server{},
		SQLSources:  map[string]*plan.SQLSource{},
		A2AAgents:   map[string]*plan.A2AAgent{},
		AuthPlugins: map[string]*plan.AuthPlugin{},
		Secrets:     plan.Secrets{Dir: dep.AI.Secrets.Dir},
		Agents:      map[string]*plan.Agent{},
	}
	for _, name := range config.SortedKeys(dep.AI.AuthPlugins) {
		if ap := dep.AI.AuthPlugins[name]; ap != nil {
			p.AuthPlugins[name] = &plan.AuthPlugin{Command: ap.Command, Args: ap.Args, SHA256: ap.SHA256, Env: mcpkind.EnvVars(ap.Env)}
		}
	}
	usecases := map[string]bool{}
	for _, k := range in.Usecases {
		usecases[k] = true
	}
	env := &grants.Env{Deployment: dep, Auth: reg, Usecases: usecases, Plan: p}
	for _, name := range grants.Names() {
		k, _ := grants.Lookup(name)
		dds = append(dds, k.CheckDeployment(env)...)
	}
	dep.Index.Locate(dds)
	ds = append(ds, dds...)

	// The artifacts.
	for _, art := range in.Config.Artifacts {
		ads := compileArtifact(env, art, dep.Incomplete)
		art.Index.Locate(ads)
		for i := range ads {
			if ads[i].Range == nil {
				ads[i].Range = &diag.Range{File: art.File}
			}
		}
		ds = append(ds, ads...)
	}

	ds.Sort()
	if ds.HasErrors() {
		return nil, ds
	}
	return p, ds
}

func compileArtifact(env *grants.Env, art *config.Artifact, depIncomplete bool) diag.Diagnostics {
	var ds diag.Diagnostics
	pa := &plan.Agent{Name: art.Name, File: art.File, Description: art.Description, Grants: []plan.Grant{}}
	for i, c := range art.Capabilities {
		cp := config.Item("capabilities", i)
		k, ok := grants.Lookup(c.Kind)
		if !ok {
			what := "unknown capability kind %q"
			if c.Kind == "" {
				what = "the capability names no kind%.0q"
			}
			ds = append(ds, diag.Errorf(diag.CapabilityKindUnknown, config.Join(cp, "kind"), what, c.Kind).
				WithDetail("registered kinds: %s", strings.Join(grants.Names(), ", ")))
			continue
		}
		if depIncomplete {
			continue // the deployment could not be read: resolving grants would only add noise
		}
		spec, gds := k.Compile(env, art, c.Settings, cp)
		ds = append(ds, gds...)
		if spec != nil {
			pa.Grants = append(pa.Grants, plan.Grant{Kind: c.Kind, Spec: spec})
		}
	}
	_, pds := policy.New(art.Policies, "policies")
	ds = append(ds, pds...)
	pa.Policies = plan.Policies{
		ToolTimeoutMS: art.Policies.ToolTimeoutMS,
		Approval:      art.Policies.Approval,
		DeniedTools:   art.Policies.DeniedTools,
	}
	for _, r := range art.Policies.Rules {
		pa.Policies.Rules = append(pa.Policies.Rules, plan.Rule{When: r.When, Effect: r.Effect})
	}
	env.Plan.Agents[art.Name] = pa
	return ds
}

func checkPlugins(plugins map[string]*config.AuthPlugin) diag.Diagnostics {
	var ds diag.Diagnostics
	for _, name := range config.SortedKeys(plugins) {
		ap := plugins[name]
		p := config.Join("ai.auth_plugins", name)
		if ap == nil || ap.Command == "" {
			ds = append(ds, diag.Errorf(diag.AuthPluginInvalid, p, "auth plugin %q needs a command", name))
		}
		switch {
		case ap == nil || ap.SHA256 == "":
			ds = append(ds, diag.Errorf(diag.AuthPluginInvalid, config.Join(p, "sha256"),
				"auth plugin %q has no sha256 checksum; heddle starts no unverified binary", name).
				WithDetail("write the binary's checksum: sha256sum <binary>"))
		case !sha256RE.MatchString(strings.ToLower(ap.SHA256)):
			ds = append(ds, diag.Errorf(diag.AuthPluginInvalid, config.Join(p, "sha256"),
				"the checksum must be 64 hexadecimal digits"))
		}
		if ap != nil {
			ds = append(ds, mcpkind.CheckEnv(ap.Env, config.Join(p, "env"))...)
		}
	}
	return ds
}
