// Package usecasekind is the config half of the usecase capability kind: a
// grant of operations of the application itself, called in-process as the
// caller who invoked the agent.
//
//	capabilities:
//	  - {kind: usecase, keys: [incidents.get_incident]}
//
// The keys an application registers are handed to the compiler (see
// compile.Input.Usecases); a key nobody registered is USECASE_UNKNOWN.
package usecasekind

import (
	"maps"
	"slices"
	"strings"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
)

// Kind is the config half of the usecase kind. It owns no section: use
// cases live in the application.
type Kind struct{}

var _ grants.Kind = Kind{}

// Name is "usecase".
func (Kind) Name() string { return "usecase" }

// Section is "": the kind owns no part of the deployment.
func (Kind) Section() string { return "" }

// Configure has nothing to decode or check.
func (Kind) Configure(*grants.Env, map[string]any) (grants.Configured, diag.Diagnostics) {
	return configured{}, nil
}

type configured struct{}

// Part is nothing: use cases add no resources to the plan.
func (configured) Part() (string, any, bool) { return "", nil, false }

// Grant is a usecase grant's plan spec: operations of the application itself.
type Grant struct {
	Keys []string `json:"keys"`
}

type grantSettings struct {
	Keys []string `koanf:"keys"`
}

// Compile resolves one usecase grant.
func (configured) Compile(env *grants.Env, _ *config.Artifact, settings map[string]any, p string) (any, diag.Diagnostics) {
	var g grantSettings
	ds := config.DecodeStrict(settings, &g, p)
	if len(g.Keys) == 0 && !ds.HasErrors() {
		ds = append(ds, diag.Errorf(diag.UsecaseUnknown, p, "the grant names no use-case keys"))
	}
	for i, k := range g.Keys {
		if !env.Usecases[k] {
			d := diag.Errorf(diag.UsecaseUnknown, config.Item(config.Join(p, "keys"), i),
				"use case %q is not registered by this application", k)
			if len(env.Usecases) == 0 {
				d = d.WithDetail("this build registers no use cases; an application registers them with usecase.Register before compiling")
			} else {
				d = d.WithDetail("registered: %s", strings.Join(slices.Sorted(maps.Keys(env.Usecases)), ", "))
			}
			ds = append(ds, d)
		}
	}
	if ds.HasErrors() {
		return nil, ds
	}
	return &Grant{Keys: g.Keys}, ds
}

// GrantSettings and SectionEntry document the types the kind decodes.
func (Kind) GrantSettings() any { return grantSettings{} }
func (Kind) SectionEntry() any  { return nil }

var _ grants.Documented = Kind{}
