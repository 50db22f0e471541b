package mcplive

import (
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/runtime/driver"
)

// Offered reports whether any grant of server, or any use of it that
// application code declared, lets tool through its filters: a tool the
// lock does not pin is drift only then.
func (i *instance) Offered(server, tool string) bool {
	for _, a := range i.env.Plan.Agents {
		for _, g := range a.Grants {
			if mg, ok := g.Spec.(*mcpkind.Grant); ok && mg.Server == server && filter(tool, mg.Include, mg.Exclude) {
				return true
			}
		}
	}
	for _, u := range i.uses {
		if u.Server == server && filter(tool, u.Include, nil) {
			return true
		}
	}
	return false
}

var _ driver.Pinner = (*instance)(nil)
