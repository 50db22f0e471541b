package mcplive

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/heddlehq/heddle/diag"
)

// Refresh lists the tools of the named servers of rt now — every server rt
// opened when none is named — rather than when a list_changed or a
// reconnect says so: a server that is not connected (a lazy one not used
// yet, one that is down) is connected first, under its handshake budget.
// Toolsets see the new tools at their next listing, and watchers get the
// events. It returns the coded error of each server that is unavailable
// afterwards, by name. A name rt did not open is MCP_SERVER_UNKNOWN, and
// nothing is refreshed.
func Refresh(ctx context.Context, rt Instances, servers ...string) (unavailable map[string]error, err error) {
	i := instanceOf(rt)
	var unknown []error
	for _, name := range servers {
		if i == nil || i.servers[name] == nil {
			unknown = append(unknown, diag.New(diag.MCPServerUnknown, "refresh: server %q is not opened by this runtime", name))
		}
	}
	if len(unknown) > 0 {
		return nil, errors.Join(unknown...)
	}
	if i == nil {
		return map[string]error{}, nil
	}
	return i.refresh(ctx, servers), nil
}

// refresh lists the named servers' tools now (every server's when names is
// empty), concurrently, each under the handshake budget: a connected
// server is listed over its session, one that is not (lazy and not used
// yet, or down) is connected by its supervisor's attempt, which lists it.
// A server that cannot list its tools is down with the coded error of why,
// returned by name.
func (i *instance) refresh(ctx context.Context, names []string) map[string]error {
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(i.servers))
	}
	var (
		mu  sync.Mutex
		out = map[string]error{}
		wg  sync.WaitGroup
	)
	for _, name := range slices.Compact(slices.Sorted(slices.Values(names))) {
		s := i.servers[name]
		if s == nil {
			continue
		}
		wg.Go(func() {
			if err := s.refreshNow(ctx); err != nil {
				mu.Lock()
				out[name] = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// refreshNow lists the server's tools now and returns why it is not ready
// afterwards, or nil.
func (s *server) refreshNow(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.inst.env.Budget)
	defer cancel()
	if !s.connected() {
		if err := s.sup.Recheck(ctx); err != nil && s.readyErr() == nil {
			return err
		}
		return s.readyErr()
	}
	if _, _, err := s.refresh(ctx, true); err != nil {
		if ctx.Err() != nil {
			return s.listTimedOut(err)
		}
		if rerr := s.readyErr(); rerr != nil {
			return rerr
		}
		return err
	}
	return s.readyErr()
}
