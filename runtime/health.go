package runtime

import (
	"slices"
	"strings"
	"time"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
)

// Report is the runtime's dependency report: what /readyz and heddle health
// show. It tells the truth: a server is ready only while it has a session
// and its tools were listed.
type Report struct {
	// Ready is false when any required dependency is not ready.
	Ready        bool         `json:"ready"`
	Dependencies []Dependency `json:"dependencies"`
}

// Health reports every dependency: each MCP server the runtime opened
// (including those only application code reaches through MCP), and each
// dependency of the other kinds.
func (rt *Runtime) Health() Report {
	r := Report{Ready: true, Dependencies: []Dependency{}}
	for _, name := range config.SortedKeys(rt.servers) {
		s := rt.servers[name]
		st, code, tools, listed := s.status()
		d := Dependency{Name: name, Kind: "mcp", State: st, Required: s.spec.Required, Tools: tools, Agents: slices.Clone(s.spec.GrantedTo)}
		if st != StateReady {
			d.Code = code
			if d.Code == "" {
				d.Code = diag.MCPServerUnreachable
			}
		}
		if !listed.IsZero() {
			t := listed.UTC().Truncate(time.Millisecond)
			d.ListedAt = &t
		}
		r.Dependencies = append(r.Dependencies, d)
	}
	for _, kind := range config.SortedKeys(rt.instances) {
		r.Dependencies = append(r.Dependencies, rt.instances[kind].Status()...)
	}
	slices.SortStableFunc(r.Dependencies, func(a, b Dependency) int {
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, d := range r.Dependencies {
		if d.Required && d.State != StateReady {
			r.Ready = false
		}
	}
	return r
}
