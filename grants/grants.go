// Package grants is the contract of capability kinds, and the set of kinds a
// program links. Each kind — mcp, usecase, sql, a2a, or one an application
// adds — is a package of its own with two halves: the config half (this
// contract: pure checks over the deployment and the artifacts, no network)
// and the live half (driver.Kind, opened by the runtime). The compiler looks
// kinds up in a Set by the kind: key of each capability and never switches on
// them, so adding a kind is adding a package and one entry in a set.
//
// A kind's config half owns its section of the deployment, if it has one: it
// declares the key (ai.<section>), decodes the raw subtree config hands it
// strictly itself, applies its defaults once, checks it, resolves the grants
// of its kind against it, and contributes its part of the plan:
//
//	func (Kind) Name() string    { return "sql" }
//	func (Kind) Section() string { return "sql_sources" }
//	func (Kind) Configure(env *grants.Env, raw map[string]any) (grants.Configured, diag.Diagnostics) {
//		var sources map[string]*Source
//		ds := config.DecodeStrict(raw, &sources, "ai.sql_sources")
//		…
//	}
//
// Sets pair both halves of every kind (see package builtin), so that a
// configuration the compiler accepts is one the runtime can open.
package grants

import (
	"fmt"
	"slices"
	"sync"

	"github.com/heddlehq/heddle/auth"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
)

// Kind is the config half of one capability kind. Kinds are values without
// state; everything one compilation learns lives in the Configured value
// Configure returns.
type Kind interface {
	// Name is the kind as artifacts write it: {kind: <name>, …}.
	Name() string
	// Section is the key of the deployment section the kind owns
	// (ai.<section>), or "" when it owns none.
	Section() string
	// Configure decodes the kind's section — raw is the subtree at
	// ai.<section>, nil when the deployment has none — strictly, applies
	// its defaults, and checks it. Diagnostic paths are deployment paths
	// (ai.<section>.…). It runs once per compilation, before any grant.
	Configure(env *Env, raw map[string]any) (Configured, diag.Diagnostics)
}

// Configured is one kind's view of one deployment, made by Configure and
// used by one compilation.
type Configured interface {
	// Compile resolves one grant of art, written at path (capabilities[i])
	// with settings (every key but kind:). It returns the grant's plan
	// spec, or nil when the grant is in error. Diagnostic paths are
	// artifact paths.
	Compile(env *Env, art *config.Artifact, settings map[string]any, path string) (any, diag.Diagnostics)
	// Part returns the kind's part of the plan once every grant is
	// compiled: its JSON key and value. ok is false when the kind adds
	// nothing to the plan.
	Part() (key string, value any, ok bool)
}

// Env is what kinds see while compiling. It is used by one compilation at a
// time.
type Env struct {
	Deployment *config.Deployment
	// Auth holds the registered strategies plus the deployment's plugins.
	Auth *auth.Registry
	// Usecases holds the keys of the application's registered operations.
	Usecases map[string]bool
}

// RemoteClients is the deployment's ai.remote_clients setting (required or
// optional), which decides a dependency's requiredness when it sets none.
func (e *Env) RemoteClients() string { return e.Deployment.AI.RemoteClients }

// Set is an ordered set of kinds' config halves. A Set is immutable and
// safe for concurrent use.
type Set struct {
	kinds []Kind
	// catalog is the core's catalogue followed by each Coded kind's
	// entries; nil for a set NewSet did not make.
	catalog []diag.Entry
}

// NewSet returns a set of kinds, in the order given (the order their parts
// appear in a plan). It panics when two kinds share a name or a section, a
// name is empty, or a code is catalogued twice (by two kinds, or by a kind
// and the core): programming errors, found at start.
func NewSet(kinds ...Kind) *Set {
	names, sections := map[string]bool{}, map[string]bool{}
	for _, k := range kinds {
		n, sec := k.Name(), k.Section()
		if n == "" {
			panic("grants: a kind with an empty name")
		}
		if names[n] {
			panic(fmt.Sprintf("grants: kind %q twice in one set", n))
		}
		if sec != "" && sections[sec] {
			panic(fmt.Sprintf("grants: section ai.%s owned by two kinds", sec))
		}
		names[n], sections[sec] = true, true
	}
	return &Set{kinds: slices.Clone(kinds), catalog: catalog(kinds)}
}

// Lookup returns the kind called name.
func (s *Set) Lookup(name string) (Kind, bool) {
	if s == nil {
		return nil, false
	}
	for _, k := range s.kinds {
		if k.Name() == name {
			return k, true
		}
	}
	return nil, false
}

// Kinds returns the set's kinds in order.
func (s *Set) Kinds() []Kind {
	if s == nil {
		return nil
	}
	return slices.Clone(s.kinds)
}

// Catalog returns the catalogue entry of every code a program linking the
// set can report: the core's (diag.Catalog), in their order, then each
// Coded kind's own, kind by kind in the set's order. docs/errors.md is
// generated from the built-in set's catalogue, phase by phase.
func (s *Set) Catalog() []diag.Entry {
	if s == nil || s.catalog == nil {
		return diag.Catalog()
	}
	return slices.Clone(s.catalog)
}

// Entry returns the catalogue entry of code: the core's, or that of the
// kind of the set that reports it.
func (s *Set) Entry(code diag.Code) (diag.Entry, bool) {
	if s == nil || s.catalog == nil {
		return diag.Lookup(code)
	}
	i := slices.IndexFunc(s.catalog, func(e diag.Entry) bool { return e.Code == code })
	if i < 0 {
		return diag.Entry{}, false
	}
	return s.catalog[i], true
}

// Names returns the kinds' names, sorted.
func (s *Set) Names() []string {
	var out []string
	for _, k := range s.Kinds() {
		out = append(out, k.Name())
	}
	slices.Sort(out)
	return out
}

// Sections returns the deployment sections the set's kinds own, sorted.
func (s *Set) Sections() []string {
	var out []string
	for _, k := range s.Kinds() {
		if sec := k.Section(); sec != "" {
			out = append(out, sec)
		}
	}
	slices.Sort(out)
	return out
}

var (
	defaultMu  sync.RWMutex
	defaultSet *Set
)

// SetDefault makes s the set that compile uses when it is given none. The
// built-in set installs itself (package builtin); an application that links
// it needs to do nothing. It panics when called twice.
func SetDefault(s *Set) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultSet != nil {
		panic("grants: SetDefault called twice")
	}
	defaultSet = s
}

// Default returns the set installed by SetDefault, or an empty set when the
// program links none.
func Default() *Set {
	defaultMu.RLock()
	defer defaultMu.RUnlock()
	if defaultSet == nil {
		return &Set{}
	}
	return defaultSet
}

// Coded is implemented by a kind that reports codes of its own: codes that
// only it reports, from its config half or its live half. Their catalogue
// entries — meaning, fix, example — are the config half's, so that a
// program's whole catalogue (Set.Catalog) is known without opening
// anything, and docs/errors.md documents a kind's codes because the kind is
// in the built-in set, not because the core names them.
//
// A code that the core, an auth strategy or several kinds report stays in
// the core's catalogue (diag/catalog.go): MCP_AUTH_STRATEGY_INVALID is the
// mcp and a2a kinds' alike, since both build strategies from an auth:
// block. Auth strategies have no such interface: every code they report is
// one of those shared ones, and a strategy outside the binary is a plugin,
// whose failures come back under the core's codes.
//
//	func (Kind) Codes() []diag.Entry {
//		return []diag.Entry{{Code: QueueUnknown, Phase: diag.PhaseCompile,
//			Meaning: "A ticket grant names a queue ai.ticket_queues does not declare.",
//			Fix:     "Declare the queue, or correct the name."}}
//	}
type Coded interface {
	// Codes returns the entries of the kind's own codes, each with a
	// meaning and a fix, and, for start-up and call-time codes, an example.
	Codes() []diag.Entry
}

// catalog returns the core's catalogue followed by the entries of every
// Coded kind of kinds, in order. It panics when a code is empty or
// catalogued twice.
func catalog(kinds []Kind) []diag.Entry {
	out := diag.Catalog()
	by := map[diag.Code]string{}
	for _, e := range out {
		by[e.Code] = "the core"
	}
	for _, k := range kinds {
		c, ok := k.(Coded)
		if !ok {
			continue
		}
		for _, e := range c.Codes() {
			if e.Code == "" {
				panic(fmt.Sprintf("grants: kind %q catalogues an empty code", k.Name()))
			}
			if other, dup := by[e.Code]; dup {
				panic(fmt.Sprintf("grants: code %s catalogued twice, by %s and by kind %q", e.Code, other, k.Name()))
			}
			by[e.Code] = fmt.Sprintf("kind %q", k.Name())
			out = append(out, e)
		}
	}
	return out
}

// Documented is implemented by kinds that tell generators of documentation
// and schemas the Go types they decode (with koanf tags): a grant's
// settings, and one entry of the section the kind owns. The built-in kinds
// implement it, and a test keeps docs/configuration.md in step with them.
type Documented interface {
	// GrantSettings returns a zero value of the type a grant's settings
	// decode into.
	GrantSettings() any
	// SectionEntry returns a zero value of the type one entry of
	// ai.<section> decodes into, or nil when the kind owns no section.
	SectionEntry() any
}
