package statestore

import (
	"context"
	"time"
)

// Spent remembers, in the shared store, the sealed states the MCP facade
// accepted, until they expire, so that a fleet accepts each once
// (mcpfacade.Spender).
type Spent struct{ s *Store }

// Spent returns the store's record of accepted states; nil when the store
// is not shared.
func (s *Store) Spent() *Spent {
	if !s.Shared() {
		return nil
	}
	return &Spent{s: s}
}

// Spend records id until until, and reports whether it was new (SET NX).
// A store that does not answer is STATE_UNAVAILABLE: the state is refused.
func (sp *Spent) Spend(ctx context.Context, id string, until time.Time) (bool, error) {
	ttl := time.Until(until)
	if ttl <= 0 {
		return false, nil
	}
	ctx, cancel := sp.s.Bounded(ctx)
	defer cancel()
	fresh, err := sp.s.rdb.SetNX(ctx, sp.s.Key("spent", id), 1, ttl).Result()
	if err := sp.s.Observe(err, "accepting a sealed requestState once"); err != nil {
		return false, err
	}
	return fresh, nil
}
