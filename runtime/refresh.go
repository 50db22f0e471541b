package runtime

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
)

// Refresher is an Instance whose dependencies' tools can be listed again
// on demand (Runtime.Refresh).
type Refresher interface {
	// Refresh lists the tools of the named dependencies now (all of the
	// kind's when names is empty; names the kind does not have are left
	// out), connecting those that are not connected, and returns the
	// coded error of each that could not list them.
	Refresh(ctx context.Context, names []string) map[string]error
	// Has reports whether the kind opened the dependency called name.
	Has(name string) bool
}

// RefreshResult is what Runtime.Refresh found.
type RefreshResult struct {
	// Unavailable names each server that could not list its tools, with
	// the coded error of why. It stays unavailable (its tools answer
	// TOOL_UNAVAILABLE) until its supervisor, or a later Refresh, lists
	// them.
	Unavailable map[string]error
}

// Refresh lists the tools of the named servers now — every server the
// runtime opened when none is named — rather than when a list_changed or a
// reconnect says so: a server that is not connected (a lazy one not used
// yet, one that is down) is connected first, under its handshake budget.
// Toolsets see the new tools at their next listing, and watchers get the
// events. A name the runtime did not open is MCP_SERVER_UNKNOWN, and
// nothing is refreshed.
func (rt *Runtime) Refresh(ctx context.Context, servers ...string) (RefreshResult, error) {
	res := RefreshResult{Unavailable: map[string]error{}}
	var refreshers []Refresher
	for _, kind := range config.SortedKeys(rt.instances) {
		if r, ok := rt.instances[kind].(Refresher); ok {
			refreshers = append(refreshers, r)
		}
	}
	var unknown []error
	for _, name := range servers {
		if !slices.ContainsFunc(refreshers, func(r Refresher) bool { return r.Has(name) }) {
			unknown = append(unknown, diag.New(diag.MCPServerUnknown, "refresh: server %q is not opened by this runtime", name))
		}
	}
	if len(unknown) > 0 {
		return res, errors.Join(unknown...)
	}
	for _, r := range refreshers {
		maps.Copy(res.Unavailable, r.Refresh(ctx, servers))
	}
	return res, nil
}
