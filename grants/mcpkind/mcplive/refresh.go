package mcplive

import (
	"context"
	"slices"
	"sync"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/runtime"
)

// Has reports whether the instance opened the server called name.
func (i *instance) Has(name string) bool { return i.servers[name] != nil }

// Refresh lists the named servers' tools now (every server's when names is
// empty), concurrently, each under the handshake budget: a connected
// server is listed over its session, one that is not (lazy and not used
// yet, or down) is connected by its supervisor's attempt, which lists it.
// A server that cannot list its tools is down with the coded error of why,
// returned by name.
func (i *instance) Refresh(ctx context.Context, names []string) map[string]error {
	if len(names) == 0 {
		names = config.SortedKeys(i.servers)
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

var _ runtime.Refresher = (*instance)(nil)
