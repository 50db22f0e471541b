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
	_ "github.com/heddlehq/heddle/policy/celrules" // the language of policies.rules, which compile checks

	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/heddlehq/heddle/auth"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/internal/limits"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/policy"
)

// Input is what Compile reads.
type Input struct {
	// Config is the loaded deployment and artifacts.
	Config *config.Config
	// Kinds are the capability kinds the plan may grant; nil means
	// grants.Default(), the set the program links (package builtin
	// installs every built-in kind).
	Kinds *grants.Set
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
	kinds := in.Kinds
	if kinds == nil {
		kinds = grants.Default()
	}
	reg := in.Auth
	if reg == nil {
		reg = auth.Default()
	}
	var ds diag.Diagnostics

	// The deployment: what config owns, then each kind's section.
	var dds diag.Diagnostics
	if rc := dep.AI.RemoteClients; rc != config.RemoteClientsRequired && rc != config.RemoteClientsOptional {
		dds = append(dds, diag.Errorf(diag.RemoteClientsUnknown, "ai.remote_clients",
			"unknown value: want required or optional"))
	}
	if pn := dep.AI.Pinning; pn != config.PinningStrict && pn != config.PinningWarn {
		dds = append(dds, diag.Errorf(diag.ConfigValueInvalid, "ai.pinning", "unknown value: want strict or warn"))
	}
	dds = append(dds, checkPlugins(dep.AI.AuthPlugins)...)
	reg, pds := reg.WithPlugins(dep.AI.AuthPlugins)
	dds = append(dds, pds...)
	dds = append(dds, unownedSections(dep, kinds)...)

	p := &plan.Plan{
		Version:     plan.Version,
		Env:         dep.Env,
		Sources:     dep.Sources,
		Startup:     plan.Startup{TimeoutMS: dep.AI.StartupTimeoutMS, RemoteClients: dep.AI.RemoteClients, Pinning: dep.AI.Pinning},
		AuthPlugins: map[string]*plan.AuthPlugin{},
		Secrets:     plan.Secrets{Dir: dep.AI.Secrets.Dir},
		Agents:      map[string]*plan.Agent{},
	}
	for _, name := range slices.Sorted(maps.Keys(dep.AI.AuthPlugins)) {
		if ap := dep.AI.AuthPlugins[name]; ap != nil {
			p.AuthPlugins[name] = &plan.AuthPlugin{Command: ap.Command, Args: ap.Args, SHA256: ap.SHA256, Env: grants.EnvVars(ap.Env)}
		}
	}
	usecases := map[string]bool{}
	for _, k := range in.Usecases {
		usecases[k] = true
	}
	env := &grants.Env{Deployment: dep, Auth: reg, Usecases: usecases}
	configured := map[string]grants.Configured{}
	for _, k := range kinds.Kinds() {
		c, cds := configure(env, k)
		configured[k.Name()] = c
		dds = append(dds, cds...)
	}
	dep.Index.Locate(dds)
	ds = append(ds, dds...)

	// The artifacts.
	for _, art := range in.Config.Artifacts {
		ads := compileArtifact(env, kinds, configured, p, art, dep.Incomplete)
		art.Index.Locate(ads)
		for i := range ads {
			if ads[i].Range == nil {
				ads[i].Range = &diag.Range{File: art.File}
			}
		}
		ds = append(ds, ads...)
	}

	// The front door, once the agents' deadlines are known.
	srv, sds := compileServe(dep, in.Config.Artifacts)
	dep.Index.Locate(sds)
	ds = append(ds, sds...)
	p.Serve = srv
	p.MCP = plan.MCP{Identity: dep.MCP.Identity}
	aud, ads := compileAudit(dep)
	dep.Index.Locate(ads)
	ds = append(ds, ads...)
	p.Audit = aud

	// Each kind's part, once every grant has been resolved.
	for _, k := range kinds.Kinds() {
		if key, v, ok := configured[k.Name()].Part(); ok {
			p.Parts = append(p.Parts, plan.Part{Kind: k.Name(), Key: key, Value: v})
		}
	}

	ds.Sort()
	if ds.HasErrors() {
		return nil, ds
	}
	return p, ds
}

// configure hands a kind the raw subtree of the section it owns.
func configure(env *grants.Env, k grants.Kind) (grants.Configured, diag.Diagnostics) {
	var raw map[string]any
	if sec := k.Section(); sec != "" {
		m, ok := env.Deployment.Section(sec)
		if !ok {
			c, _ := k.Configure(env, nil)
			return c, diag.Diagnostics{diag.Errorf(diag.ConfigValueInvalid, config.Join("ai", sec),
				"wrong type of value: want a mapping")}
		}
		raw = m
	}
	return k.Configure(env, raw)
}

// unownedSections reports keys of ai: that neither config nor any kind of
// the set owns.
func unownedSections(dep *config.Deployment, kinds *grants.Set) diag.Diagnostics {
	owned := map[string]bool{}
	for _, s := range kinds.Sections() {
		owned[s] = true
	}
	var ds diag.Diagnostics
	for _, key := range slices.Sorted(maps.Keys(dep.AI.Sections)) {
		if owned[key] {
			continue
		}
		known := append(config.AIKeys(), kinds.Sections()...)
		slices.Sort(known)
		detail := "known keys here: " + strings.Join(known, ", ")
		if len(kinds.Names()) == 0 {
			detail = kindsDetail(kinds) + "; " + detail
		}
		ds = append(ds, diag.Errorf(diag.ConfigKeyUnknown, config.Join("ai", key), "unknown key %q", key).WithDetail("%s", detail))
	}
	return ds
}

func compileArtifact(env *grants.Env, kinds *grants.Set, configured map[string]grants.Configured, p *plan.Plan, art *config.Artifact, depIncomplete bool) diag.Diagnostics {
	var ds diag.Diagnostics
	pa := &plan.Agent{Name: art.Name, File: art.File, Description: art.Description, Grants: []plan.Grant{}}
	for i, c := range art.Capabilities {
		cp := config.Item("capabilities", i)
		k, ok := kinds.Lookup(c.Kind)
		if !ok {
			what := "unknown capability kind %q"
			if c.Kind == "" {
				what = "the capability names no kind%.0q"
			}
			ds = append(ds, diag.Errorf(diag.CapabilityKindUnknown, config.Join(cp, "kind"), what, c.Kind).
				WithDetail("%s", kindsDetail(kinds)))
			continue
		}
		if depIncomplete {
			continue // the deployment could not be read: resolving grants would only add noise
		}
		spec, gds := configured[k.Name()].Compile(env, art, c.Settings, cp)
		ds = append(ds, gds...)
		if spec != nil {
			pa.Grants = append(pa.Grants, plan.Grant{Kind: c.Kind, Defer: c.Defer, Spec: spec})
		}
	}
	pa.Policies = plan.Policies{
		ToolTimeoutMS: art.Policies.ToolTimeoutMS,
		Approval:      art.Policies.Approval,
		DeniedTools:   art.Policies.DeniedTools,
	}
	for _, r := range art.Policies.Rules {
		pa.Policies.Rules = append(pa.Policies.Rules, plan.Rule{When: r.When, Effect: r.Effect})
	}
	for _, l := range art.Policies.Limits {
		pa.Policies.Limits = append(pa.Policies.Limits, plan.Limit(l))
	}
	// The plan's policies are checked as the runtime will build them.
	_, pds := policy.New(pa.Policies, "policies")
	ds = append(ds, pds...)
	_, lds := limits.New(pa.Policies.Limits, "policies.limits")
	ds = append(ds, lds...)
	p.Agents[art.Name] = pa
	return ds
}

func checkPlugins(plugins map[string]*config.AuthPlugin) diag.Diagnostics {
	var ds diag.Diagnostics
	for _, name := range slices.Sorted(maps.Keys(plugins)) {
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
			ds = append(ds, grants.CheckEnv(ap.Env, config.Join(p, "env"))...)
		}
	}
	return ds
}

// kindsDetail lists the set's kinds for a CAPABILITY_KIND_UNKNOWN, or says
// that the program links none.
func kindsDetail(kinds *grants.Set) string {
	names := kinds.Names()
	if len(names) == 0 {
		return "this program links no capability kinds: import github.com/heddlehq/heddle/builtin, or pass compile.Input.Kinds"
	}
	return "registered kinds: " + strings.Join(names, ", ")
}
