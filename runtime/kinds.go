package runtime

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/toolscreen"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/toolname"
)

// KindSet is a set of kinds' live halves, keyed by kind name. It is
// immutable and safe for concurrent use. Sets are made by package builtin,
// which pairs each live half with its config half.
type KindSet struct {
	m map[string]driver.Kind
}

// NewKindSet returns a set of live halves. It panics on an empty name or a
// nil kind.
func NewKindSet(kinds map[string]driver.Kind) *KindSet {
	m := make(map[string]driver.Kind, len(kinds))
	for name, k := range kinds {
		if name == "" || k == nil {
			panic(fmt.Sprintf("runtime: NewKindSet with kind %q", name))
		}
		m[name] = k
	}
	return &KindSet{m: m}
}

// Lookup returns the live half of the kind called name.
func (s *KindSet) Lookup(name string) (driver.Kind, bool) {
	if s == nil {
		return nil, false
	}
	k, ok := s.m[name]
	return k, ok
}

// Names returns the set's kinds, sorted.
func (s *KindSet) Names() []string {
	if s == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(s.m))
}

var (
	defaultKindsMu sync.RWMutex
	defaultKinds   *KindSet
)

// SetDefaultKinds makes s the set Open uses when Options.Kinds is nil. The
// built-in set installs itself (package builtin), together with the config
// halves the compiler uses by default. It panics when called twice.
func SetDefaultKinds(s *KindSet) {
	defaultKindsMu.Lock()
	defer defaultKindsMu.Unlock()
	if defaultKinds != nil {
		panic("runtime: SetDefaultKinds called twice")
	}
	defaultKinds = s
}

// DefaultKinds returns the set installed by SetDefaultKinds, or an empty
// set when the program links none.
func DefaultKinds() *KindSet {
	defaultKindsMu.RLock()
	defer defaultKindsMu.RUnlock()
	if defaultKinds == nil {
		return &KindSet{}
	}
	return defaultKinds
}

// kindsToOpen returns the live halves of the kinds the plan's agents grant
// or declares resources for, and an error naming a granted kind the set
// lacks.
func kindsToOpen(p *plan.Plan, set *KindSet) (map[string]driver.Kind, error) {
	out := map[string]driver.Kind{}
	for _, a := range p.Agents {
		for _, g := range a.Grants {
			k, ok := set.Lookup(g.Kind)
			if !ok && len(set.Names()) == 0 {
				return nil, diag.New(diag.CapabilityKindUnknown,
					"agent %s grants kind %q, and this program links no kinds: import _ \"github.com/heddlehq/heddle/builtin\", or pass runtime.Options.Kinds", a.Name, g.Kind)
			}
			if !ok {
				return nil, diag.New(diag.CapabilityKindUnknown,
					"agent %s grants kind %q, which has no live half in this runtime's set of kinds (%s)", a.Name, g.Kind, strings.Join(set.Names(), ", "))
			}
			out[g.Kind] = k
		}
	}
	// A kind whose resources only application code reaches (an MCP server
	// a use case calls directly) is opened too; it opens only what is used.
	for _, pt := range p.Parts {
		if k, ok := set.Lookup(pt.Kind); ok {
			out[pt.Kind] = k
		}
	}
	return out, nil
}

// kindSource adapts a kind's Source, and the optional capabilities it
// has, to the toolset's internal source.
type kindSource struct {
	driver.Source
	kindName, prefixName string
	// The optional capabilities, found once.
	timing   driver.Timing // the zero Timing for a source without one
	capped   driver.CappedSource
	fallible driver.FallibleSource
	recheck  driver.RecheckingSource
	// deferred: every grant of the toolset this source serves says defer,
	// so its tools are reached through search_tools and load_tools.
	deferred bool

	classifier driver.ClassifyingSource // nil: classified by the tools' annotations

	mu      sync.Mutex
	gen     uint64
	set     bool
	defs    []*toolDef
	listErr error // why the source's tools could not be had, the last time they were asked for
}

func newKindSource(kind string, src driver.Source) *kindSource {
	k := &kindSource{Source: src, kindName: kind, prefixName: toolname.Sanitize(src.Name())}
	if timed, ok := src.(driver.TimedSource); ok {
		k.timing = timed.Timing()
	}
	k.capped, _ = src.(driver.CappedSource)
	k.fallible, _ = src.(driver.FallibleSource)
	k.recheck, _ = src.(driver.RecheckingSource)
	k.classifier, _ = src.(driver.ClassifyingSource)
	return k
}

func (k *kindSource) kind() string   { return k.kindName }
func (k *kindSource) name() string   { return k.Name() }
func (k *kindSource) prefix() string { return k.prefixName }

// transportTimeout is the source's own wait, or 0 when it has none.
func (k *kindSource) transportTimeout() time.Duration { return k.timing.Timeout }

// maxResultBytes is the source's cap, or 0 when results are not capped.
func (k *kindSource) maxResultBytes() int {
	if k.capped == nil {
		return 0
	}
	return k.capped.MaxResultBytes()
}

func (k *kindSource) down() bool { return k.fallible != nil && k.fallible.Down() }

// unavailable reports a source that is down, or whose tools could not be
// had the last time they were asked for.
func (k *kindSource) unavailable() bool {
	if k.down() {
		return true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.listErr != nil
}

// wake asks a source that is down to come back now, if it can be asked.
func (k *kindSource) wake() {
	if k.recheck != nil {
		k.recheck.Wake()
	}
}

// recheckUp waits for a source that is down to be re-checked, and reports
// whether it is up.
func (k *kindSource) recheckUp(ctx context.Context) bool {
	return k.recheck != nil && k.recheck.Recheck(ctx)
}

// tools returns the source's tools as definitions, cached per generation.
// When the source cannot give them, it returns the last it gave (none, at
// first) with the error, so that one source's failure costs a toolset that
// source's tools only, and the names of the others stay as they were.
func (k *kindSource) tools(ctx context.Context) ([]*toolDef, uint64, error) {
	tools, gen, err := k.Tools(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			k.listErr = err
		}
		return k.defs, k.gen, err
	}
	k.listErr = nil
	if k.set && k.gen == gen {
		return k.defs, gen, nil
	}
	defs := make([]*toolDef, len(tools))
	for i, t := range tools {
		defs[i] = defOf(t, k.classify(t))
	}
	k.defs, k.gen, k.set = defs, gen, true
	return defs, gen, nil
}

func (k *kindSource) call(ctx context.Context, d *toolDef, args map[string]any, cc *callConfig) (*mcp.CallToolResult, error) {
	return k.Call(ctx, d.tool, args, cc.opts)
}

// defOf is t as a toolset holds it, classified by c, with what screening
// its definition found.
func defOf(t *mcp.Tool, c driver.Classification) *toolDef {
	return &toolDef{tool: t, destructive: c.Destructive, readOnly: c.ReadOnly, idempotent: c.Idempotent, classifiedBy: c.By,
		flags: toolscreen.Flags(toolscreen.Tool(t))}
}
