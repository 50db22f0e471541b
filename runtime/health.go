package runtime

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/heddlehq/heddle/runtime/driver"
)

// Report is the runtime's dependency report: what /readyz and heddle health
// show. It tells the truth: a server is ready only while it has a session
// and its tools were listed.
type Report struct {
	// Ready is false when any required dependency is not ready.
	Ready        bool                `json:"ready"`
	Dependencies []driver.Dependency `json:"dependencies"`
	// Generation, PlanHash and LastReloadError say which configuration is
	// live: they are set by Generations (heddle serve), and left out of a
	// runtime's own report.
	Generation      uint64         `json:"generation,omitempty"`
	PlanHash        string         `json:"plan_hash,omitempty"`
	LastReloadError *ReloadFailure `json:"last_reload_error,omitempty"`
}

// Health reports every dependency of every opened kind: each MCP server
// (including those only application code reaches through MCP), SQL source
// and remote agent.
func (rt *Runtime) Health() Report {
	r := Report{Ready: true, Dependencies: []driver.Dependency{}}
	for _, kind := range slices.Sorted(maps.Keys(rt.instances)) {
		r.Dependencies = append(r.Dependencies, rt.instances[kind].Status()...)
	}
	slices.SortStableFunc(r.Dependencies, func(a, b driver.Dependency) int {
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, d := range r.Dependencies {
		if d.Required && d.State != driver.StateReady && d.State != driver.StateIdle {
			r.Ready = false
		}
	}
	return r
}

// Recheck has every dependency that is not ready attempted now — each
// kind's supervisor makes its attempt at once rather than when its backoff
// says — and waits, within ctx, for those attempts; the next Health tells
// what they found. A readiness probe calls it when the report is not
// ready, so that a worker whose required dependency is back turns ready on
// that probe, with no call needed to find out. Concurrent callers share the
// attempts.
func (rt *Runtime) Recheck(ctx context.Context) {
	var wg sync.WaitGroup
	for _, inst := range rt.instances {
		if r, ok := inst.(driver.Rechecker); ok {
			wg.Go(func() { r.Recheck(ctx) })
		}
	}
	wg.Wait()
}
