// Package grants is the registry of capability kinds. Each kind — mcp,
// usecase, sql, a2a — is a package of its own that registers itself from
// init; the compiler looks kinds up by the kind: key of each capability and
// never switches on them, so adding a kind is adding a package:
//
//	func init() { grants.Register("mcp", Kind{}) }
//
// This package and the kinds' packages are the config half: pure checks over
// the deployment and the artifacts, no network. The runtime builds the live
// half of each kind from the plan.
package grants

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/heddlehq/heddle/auth"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
)

// Kind is the config half of one capability kind.
type Kind interface {
	// CheckDeployment validates the part of the deployment this kind owns
	// (ai.mcp_servers for mcp, …) and records what it declares in env.Plan.
	// It runs once per compilation, before any grant. Diagnostic paths are
	// deployment paths.
	CheckDeployment(env *Env) diag.Diagnostics
	// Compile resolves one grant of art, written at path (capabilities[i])
	// with settings (every key but kind:). It returns the grant's plan spec,
	// or nil when the grant is in error. Diagnostic paths are artifact paths.
	Compile(env *Env, art *config.Artifact, settings map[string]any, path string) (any, diag.Diagnostics)
}

// Env is what kinds see while compiling. It is used by one compilation at a
// time.
type Env struct {
	Deployment *config.Deployment
	// Auth holds the registered strategies plus the deployment's plugins.
	Auth *auth.Registry
	// Usecases holds the keys of the application's registered operations.
	Usecases map[string]bool
	// Plan is the plan being built; kinds add the resources they declare.
	Plan *plan.Plan
}

var (
	mu    sync.RWMutex
	kinds = map[string]Kind{}
)

// Register makes a kind available under name. It panics when name is empty
// or already taken: both are programming errors found at start.
func Register(name string, k Kind) {
	mu.Lock()
	defer mu.Unlock()
	if name == "" || k == nil {
		panic("grants: Register with an empty name or nil kind")
	}
	if _, dup := kinds[name]; dup {
		panic(fmt.Sprintf("grants: kind %q registered twice", name))
	}
	kinds[name] = k
}

// Lookup returns the kind registered under name.
func Lookup(name string) (Kind, bool) {
	mu.RLock()
	defer mu.RUnlock()
	k, ok := kinds[name]
	return k, ok
}

// Names returns the registered kinds, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Sorted(maps.Keys(kinds))
}
