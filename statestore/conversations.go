package statestore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"time"
)

// Conversations keeps, in a shared store, the tools each conversation
// loaded (load_tools): a set per caller, agent and conversation id, which
// every worker of a fleet reads before serving the conversation and adds
// to when its model loads more. A conversation no request has reached for
// its idle time is forgotten, as a worker forgets its own.
type Conversations struct {
	s    *Store
	idle time.Duration
}

// MaxLoaded bounds the names one conversation keeps.
const MaxLoaded = 1000

// Conversations returns the store's conversations, forgotten after idle;
// nil when the store is not shared.
func (s *Store) Conversations(idle time.Duration) *Conversations {
	if !s.Shared() {
		return nil
	}
	return &Conversations{s: s, idle: idle}
}

// key is a conversation's key: the caller's subject hashed, never shown.
func (c *Conversations) key(agent, subject, id string) string {
	sum := sha256.Sum256([]byte(subject))
	return c.s.Key("conv", agent, base64.RawURLEncoding.EncodeToString(sum[:12]), id)
}

// Loaded returns the names the conversation loaded (none for a new one)
// and keeps it for another idle time. A store that does not answer is
// STATE_UNAVAILABLE: a conversation is never silently forgotten.
func (c *Conversations) Loaded(ctx context.Context, agent, subject, id string) ([]string, error) {
	ctx, cancel := c.s.Bounded(ctx)
	defer cancel()
	k := c.key(agent, subject, id)
	pipe := c.s.rdb.Pipeline()
	members := pipe.SMembers(ctx, k)
	pipe.PExpire(ctx, k, c.idle)
	_, err := pipe.Exec(ctx)
	if err := c.s.Observe(err, "reading a conversation's loaded tools"); err != nil {
		return nil, err
	}
	return members.Val(), nil
}

// Add records names as loaded by the conversation, at most MaxLoaded in
// all, and keeps it for another idle time.
func (c *Conversations) Add(ctx context.Context, agent, subject, id string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if len(names) > MaxLoaded {
		names = names[:MaxLoaded]
	}
	ctx, cancel := c.s.Bounded(ctx)
	defer cancel()
	k := c.key(agent, subject, id)
	members := make([]any, len(names))
	for i, n := range names {
		members[i] = n
	}
	pipe := c.s.rdb.Pipeline()
	pipe.SAdd(ctx, k, members...)
	pipe.PExpire(ctx, k, c.idle)
	_, err := pipe.Exec(ctx)
	return c.s.Observe(err, "keeping a conversation's loaded tools")
}
