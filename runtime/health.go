package runtime

import (
	"slices"
	"strings"

	"github.com/heddlehq/heddle/config"
)

// Report is the runtime's dependency report: what /readyz and heddle health
// show. It tells the truth: a server is ready only while it has a session
// and its tools were listed.
type Report struct {
	// Ready is false when any required dependency is not ready.
	Ready        bool         `json:"ready"`
	Dependencies []Dependency `json:"dependencies"`
}

// Health reports every dependency of every opened kind: each MCP server
// (including those only application code reaches through MCP), SQL source
// and remote agent.
func (rt *Runtime) Health() Report {
	r := Report{Ready: true, Dependencies: []Dependency{}}
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
