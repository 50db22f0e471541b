// Package builtin is heddle's set of built-in capability kinds — mcp,
// usecase, sql and a2a — and auth strategies, with both halves of each: the
// config half the compiler checks with, and the live half the runtime opens.
// Linking this package installs the set as the default of both
// (grants.Default and runtime.DefaultKinds; auth.Default and authlive's
// builders), so that a configuration `heddle check` accepts is one the
// runtime can open: no kind or strategy is ever half there.
//
// An application adds a kind of its own by passing a larger set to both
// sides:
//
//	set := builtin.Default().With(builtin.Kind{Config: ticketkind.Kind{}, Live: ticketlive.Kind{}})
//	p, ds := compile.Compile(compile.Input{Config: cfg, Kinds: set.Grants()})
//	rt, err := runtime.Open(ctx, p, runtime.Options{Kinds: set.Runtime()})
//
// or, for the heddle command with its own kinds, heddlecmd.Options.Kinds.
package builtin

import (
	_ "github.com/heddlehq/heddle/policy/celrules" // the language of policies.rules

	"fmt"
	"slices"

	"github.com/heddlehq/heddle/auth"
	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/auth/oauth"
	"github.com/heddlehq/heddle/auth/plugin"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/grants/a2akind"
	"github.com/heddlehq/heddle/grants/a2akind/a2alive"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/grants/sqlkind"
	"github.com/heddlehq/heddle/grants/sqlkind/sqllive"
	"github.com/heddlehq/heddle/grants/usecasekind"
	"github.com/heddlehq/heddle/grants/usecasekind/usecaselive"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/usecase"
)

// kinds is the one list of built-in kinds, in the order their parts appear
// in a plan.
var kinds = []Kind{
	{Config: mcpkind.Kind{}, Live: mcplive.Kind{Uses: usecaseMCPUses}},
	{Config: usecasekind.Kind{}, Live: usecaselive.Kind{}},
	{Config: sqlkind.Kind{}, Live: sqllive.Kind{}},
	{Config: a2akind.Kind{}, Live: a2alive.Kind{}},
}

// The built-in auth strategies with live halves of their own: oauth, and
// the host of auth plugins (bearer and static are package auth's and
// authlive's own).
func init() {
	d := Default()
	grants.SetDefault(d.Grants())
	runtime.SetDefaultKinds(d.Runtime())

	auth.Register(oauth.Settings)
	authlive.Register(oauth.Kind, oauth.Builder(oauth.Options{}))
	auth.Default().EnablePlugins()
	authlive.Register(authlive.PluginKind, plugin.Build)
}

// Kind is both halves of one capability kind.
type Kind struct {
	// Config is the config half: it owns the kind's ai.<section>, checks
	// grants and contributes the kind's part of the plan.
	Config grants.Kind
	// Live is the live half the runtime opens.
	Live driver.Kind
}

// Set is a set of kinds, both halves of each. A Set is immutable and safe
// for concurrent use; With returns a new one.
type Set struct {
	kinds []Kind
}

// Default returns the built-in kinds.
func Default() *Set { return New(kinds...) }

// New returns a set of the given kinds, in order. It panics when a kind
// lacks a half, or two kinds share a name or a section: programming errors,
// found at start.
func New(ks ...Kind) *Set {
	for _, k := range ks {
		if k.Config == nil {
			panic("builtin: a kind without its config half")
		}
		if k.Live == nil {
			panic(fmt.Sprintf("builtin: kind %q without its live half", k.Config.Name()))
		}
	}
	s := &Set{kinds: slices.Clone(ks)}
	s.Grants() // checks names and sections
	return s
}

// With returns a set holding s's kinds followed by ks.
func (s *Set) With(ks ...Kind) *Set { return New(append(slices.Clone(s.kinds), ks...)...) }

// WithMCP returns a copy of s whose mcp kind's live half is the one s holds
// changed by set: the settings a front door gives the MCP client for one
// run, such as heddle lock's Eager or a metrics hook. A set whose mcp live
// half is not a mcplive.Kind is returned as it is.
func (s *Set) WithMCP(set func(k *mcplive.Kind)) *Set {
	ks := slices.Clone(s.kinds)
	for i, k := range ks {
		if live, ok := k.Live.(mcplive.Kind); ok {
			set(&live)
			ks[i].Live = live
		}
	}
	return &Set{kinds: ks}
}

// usecaseMCPUses are the MCP servers the registered use cases reach
// directly (usecase.WithMCP), as the mcp kind opens them: the usecase kind
// hands its uses to the mcp kind here, inside the set.
func usecaseMCPUses() []mcplive.Use {
	uses := usecase.MCPUses()
	out := make([]mcplive.Use, len(uses))
	for i, u := range uses {
		out[i] = mcplive.Use{Server: u.Server, Include: u.Include}
	}
	return out
}

// Grants returns the config halves, for compile.Input.Kinds.
func (s *Set) Grants() *grants.Set {
	cfg := make([]grants.Kind, len(s.kinds))
	for i, k := range s.kinds {
		cfg[i] = k.Config
	}
	return grants.NewSet(cfg...)
}

// Runtime returns the live halves, for runtime.Options.Kinds.
func (s *Set) Runtime() *runtime.KindSet {
	live := map[string]driver.Kind{}
	for _, k := range s.kinds {
		live[k.Config.Name()] = k.Live
	}
	return runtime.NewKindSet(live)
}
