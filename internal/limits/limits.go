// Package limits holds an agent's policies.limits: rates of calls and bounds
// on calls at once, counted per caller, for the agent or per tool, in one
// worker process.
//
// An operator writes, in agent.yaml:
//
//	policies:
//	  limits:
//	    - {calls: 60, per: 1m, by: caller}          # each caller: 60 calls a minute
//	    - {concurrent: 8}                           # the agent: 8 calls at once
//	    - {calls: 5, per: 1h, tools: ["deploy_*"]}  # the agent's deploys: 5 an hour
//
// and the runtime, for each call that would be sent:
//
//	set, ds := limits.New(p.Policies.Limits, "policies.limits") // at compile time; ds are POLICY_INVALID
//	release, refused := set.Admit(time.Now(), limits.Call{Caller: subject, Tool: name})
//	if refused != nil {
//		return refused // TOOL_RATE_LIMITED, with refused.RetryAfter
//	}
//	defer release()
//
// A rate is a token bucket (golang.org/x/time/rate) that holds calls
// tokens and refills at calls per per: a burst of calls is admitted at
// once, then one call every per/calls. A call is admitted only when every
// entry that applies to it admits it, and then counts against all of them;
// a refused call counts against none.
//
// Buckets per caller are bounded in memory: a bucket unused for a whole
// interval is full again, the same as a new one, and is dropped; past
// [MaxKeys] keys in one entry, the least recently used is forgotten.
// Counts of calls at once are kept only while calls are in flight.
//
// A fleet of workers counts its rates together through [Set.AdmitShared]:
// the rate entries that apply to a call are decided at once by a [Take] in
// a store every worker reaches (serve.state kind redis), with the same
// buckets and the same all-or-nothing rule, so that two workers admit what
// one would. Bounds on calls at once stay each worker's own: a count of
// calls in flight kept in a store would need leases that outlive a worker
// that dies with calls in flight, and a worker's calls at once are what
// its own resources bound.
package limits

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/heddlehq/heddle/config/setting"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/policy"
)

// MaxKeys is how many callers (or tools) one entry keeps a bucket for. A
// bucket that is full again is dropped first; only when more keys than
// this were active within one interval is a partly used bucket forgotten,
// and its key starts again with a full one.
const MaxKeys = 10000

// ConcurrentRetryAfter is the retry-after of a call refused because a
// bound on calls at once was reached: a place frees when a call in flight
// ends, which nothing can predict; this is a hint, not a promise.
const ConcurrentRetryAfter = time.Second

// Set is an agent's compiled limits. A nil *Set admits every call. It is
// safe for concurrent use.
type Set struct {
	mu      sync.Mutex
	entries []*entry
}

type entry struct {
	path  string // policies.limits[i], what a refusal names
	by    string
	tools []string

	// A rate: calls per per.
	calls int
	per   time.Duration
	every rate.Limit
	keys  map[string]*list.Element // of *bucket
	lru   *list.List               // front: most recently used

	// A bound on calls at once.
	concurrent int
	inFlight   map[string]int
}

type bucket struct {
	key  string
	lim  *rate.Limiter
	last time.Time
}

// Call is what an entry may be counted by.
type Call struct {
	// Caller is the caller's subject; anonymous callers ("") share one count.
	Caller string
	// Tool is the model-facing name; OriginalName the tool's own name at
	// its source. A tools glob matches either.
	Tool, OriginalName string
}

// Refusal says which entry refused a call and when a call may be admitted.
type Refusal struct {
	// Limit is the path of the entry: policies.limits[0].
	Limit string
	// Kind is "calls" for a rate, "concurrent" for a bound on calls at once.
	Kind string
	// RetryAfter is when the entry will admit the call: exact for a rate
	// (while no other call takes the token first), ConcurrentRetryAfter
	// for calls at once.
	RetryAfter time.Duration
}

// Error describes the refusal in words the model may read; it names the
// setting, never the caller.
func (r *Refusal) Error() string {
	if r.Kind == "concurrent" {
		return fmt.Sprintf("too many calls at once (%s); retry after %d ms", r.Limit, r.RetryAfter.Milliseconds())
	}
	return fmt.Sprintf("too many calls (%s); retry after %d ms", r.Limit, r.RetryAfter.Milliseconds())
}

// New checks and compiles limits written at at (usually "policies.limits"),
// reporting every problem as a [diag.PolicyInvalid] diagnostic at the
// entry or its key; it returns a nil Set when any is an error, or when
// there are no limits.
func New(ls []plan.Limit, at string) (*Set, diag.Diagnostics) {
	var ds diag.Diagnostics
	s := &Set{}
	for i, l := range ls {
		p := setting.Item(at, i)
		e, eds := compileEntry(l, p)
		ds = append(ds, eds...)
		if e != nil {
			s.entries = append(s.entries, e)
		}
	}
	if ds.HasErrors() || len(s.entries) == 0 {
		return nil, ds
	}
	return s, ds
}

func compileEntry(l plan.Limit, p string) (*entry, diag.Diagnostics) {
	var ds diag.Diagnostics
	bad := func(key, format string, args ...any) {
		at := p
		if key != "" {
			at = setting.Join(p, key)
		}
		ds = append(ds, diag.Errorf(diag.PolicyInvalid, at, format, args...).
			WithDetail("an entry is a rate, {calls: 60, per: 1m}, or a bound on calls at once, {concurrent: 8}; by is caller, agent or tool"))
	}
	switch l.By {
	case "", setting.LimitByCaller, setting.LimitByAgent, setting.LimitByTool:
	default:
		bad("by", "by must be caller, agent or tool")
	}
	ds = append(ds, policy.CompileDeniedTools(l.Tools, setting.Join(p, "tools"))...)
	rateSet := l.Calls != 0 || l.Per != ""
	switch {
	case rateSet && l.Concurrent != 0:
		bad("", "an entry is either a rate (calls, per) or a bound on calls at once (concurrent), not both")
	case !rateSet && l.Concurrent == 0:
		bad("", "an entry needs calls and per, or concurrent")
	case l.Concurrent < 0:
		bad("concurrent", "concurrent must be a positive whole number")
	}
	var per time.Duration
	if rateSet {
		if l.Calls <= 0 {
			bad("calls", "calls must be a positive whole number")
		}
		var err error
		switch per, err = time.ParseDuration(l.Per); {
		case l.Per == "":
			bad("per", "a rate needs per, the interval of its calls: a duration with a unit, such as 30s, 1m or 1h")
		case err != nil:
			bad("per", "per must be a duration with a unit, such as 30s, 1m or 1h")
		case per <= 0:
			bad("per", "per must be a positive duration")
		}
	}
	if ds.HasErrors() {
		return nil, ds
	}
	e := &entry{path: p, by: l.By, tools: l.Tools, calls: l.Calls, per: per, concurrent: l.Concurrent}
	if e.by == "" {
		e.by = setting.LimitByAgent
	}
	if rateSet {
		e.every = rate.Limit(float64(l.Calls) / per.Seconds())
		e.keys, e.lru = map[string]*list.Element{}, list.New()
	} else {
		e.inFlight = map[string]int{}
	}
	return e, nil
}

// Admit admits one call at now, or refuses it. An admitted call counts
// against every entry that applies to it; release, which must be called
// once when the call ends, gives back its places among calls at once. A
// refused call counts against nothing, and the Refusal is that of the
// entry that would admit it last.
func (s *Set) Admit(now time.Time, c Call) (release func(), refused *Refusal) {
	if s == nil {
		return func() {}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// First find whether every entry admits the call, then count it: a
	// refused call must not use up another entry's budget.
	var buckets [4]*bucket
	bs := buckets[:0]
	for _, e := range s.entries {
		if !e.applies(c) {
			continue
		}
		key := e.key(c)
		var r *Refusal
		if e.concurrent > 0 {
			if e.inFlight[key] >= e.concurrent {
				r = &Refusal{Limit: e.path, Kind: "concurrent", RetryAfter: ConcurrentRetryAfter}
			}
		} else {
			b := e.bucket(now, key)
			bs = append(bs, b)
			if tokens := b.lim.TokensAt(now); tokens < 1 {
				wait := time.Duration(math.Ceil((1 - tokens) / float64(e.every) * float64(time.Second)))
				r = &Refusal{Limit: e.path, Kind: "calls", RetryAfter: max(wait.Round(time.Millisecond), time.Millisecond)}
			}
		}
		if r != nil && (refused == nil || r.RetryAfter > refused.RetryAfter) {
			refused = r
		}
	}
	if refused != nil {
		return nil, refused
	}
	for _, b := range bs {
		b.lim.AllowN(now, 1)
	}
	var held []heldKey
	for _, e := range s.entries {
		if e.concurrent > 0 && e.applies(c) {
			key := e.key(c)
			e.inFlight[key]++
			held = append(held, heldKey{e, key})
		}
	}
	if len(held) == 0 {
		return func() {}, nil
	}
	var once sync.Once
	return func() { once.Do(func() { s.leave(held) }) }, nil
}

type heldKey struct {
	e   *entry
	key string
}

func (s *Set) leave(held []heldKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range held {
		if n := h.e.inFlight[h.key] - 1; n > 0 {
			h.e.inFlight[h.key] = n
		} else {
			delete(h.e.inFlight, h.key)
		}
	}
}

// Keys returns how many keys the set holds counts for, over all its
// entries: what a test reads to see that memory stays bounded.
func (s *Set) Keys() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.entries {
		n += len(e.keys) + len(e.inFlight)
	}
	return n
}

func (e *entry) applies(c Call) bool {
	if len(e.tools) == 0 {
		return true
	}
	for _, g := range e.tools {
		if policy.ToolMatches(g, c.Tool, c.OriginalName) {
			return true
		}
	}
	return false
}

func (e *entry) key(c Call) string {
	switch e.by {
	case setting.LimitByCaller:
		return c.Caller
	case setting.LimitByTool:
		return c.Tool
	}
	return ""
}

// bucket returns the key's bucket, making it when there is none. Buckets
// unused for a whole interval are full again, the same as new ones, and
// are dropped first; past MaxKeys the least recently used goes.
func (e *entry) bucket(now time.Time, key string) *bucket {
	for el := e.lru.Back(); el != nil; el = e.lru.Back() {
		b := el.Value.(*bucket)
		if b.key == key || now.Sub(b.last) < e.per {
			break
		}
		e.lru.Remove(el)
		delete(e.keys, b.key)
	}
	if el, ok := e.keys[key]; ok {
		b := el.Value.(*bucket)
		b.last = now
		e.lru.MoveToFront(el)
		return b
	}
	if e.lru.Len() >= MaxKeys {
		el := e.lru.Back()
		e.lru.Remove(el)
		delete(e.keys, el.Value.(*bucket).key)
	}
	b := &bucket{key: key, lim: rate.NewLimiter(e.every, e.calls), last: now}
	e.keys[key] = e.lru.PushFront(b)
	return b
}

// A Bucket is one rate entry as it counts one call, named as a store a
// fleet shares keeps it: by the entry and the key it counts by, never by a
// caller's subject.
type Bucket struct {
	// Entry is the entry's index in policies.limits.
	Entry int
	// By is what the entry counts by: caller, tool or agent.
	By string
	// Key is a digest of the caller's subject (by caller) or of the tool's
	// name (by tool), URL-safe base64 of the first 12 bytes of its SHA-256;
	// "" by agent.
	Key string
	// Calls and Per are the entry's rate: a bucket of Calls tokens that
	// refills at Calls per Per.
	Calls int
	Per   time.Duration
}

// Take decides a call against buckets in a store a fleet shares, at
// once: when every bucket holds a token, each gives one and refused is -1;
// otherwise none gives anything, refused is the index of the bucket that
// would admit the call last and retryAfter how long until it would. An
// error means nothing was decided.
type Take func(ctx context.Context, buckets []Bucket) (refused int, retryAfter time.Duration, err error)

// AdmitShared admits c as Admit does, with its rates decided by take in a
// store every worker of a fleet shares rather than in this Set, and its
// bounds on calls at once counted here, by this worker. The bounds are
// checked first: a call one of them refuses is refused without asking the
// store (its Refusal is that bound's, whatever the rates would say), and
// a call the rates refuse gives its places back. take is not called when
// no rate entry applies.
//
// When take fails, AdmitShared takes nothing and returns its error: the
// caller refuses the call, or admits it by this Set's own counts (Admit),
// which have not been kept while the store answered.
func (s *Set) AdmitShared(ctx context.Context, c Call, take Take) (release func(), refused *Refusal, err error) {
	if s == nil {
		return func() {}, nil, nil
	}
	release, refused = s.enter(c)
	if refused != nil {
		return nil, refused, nil
	}
	var buckets [4]Bucket
	bs := buckets[:0]
	for i, e := range s.entries {
		if e.concurrent == 0 && e.applies(c) {
			bs = append(bs, Bucket{Entry: i, By: e.by, Key: digest(e.key(c), e.by), Calls: e.calls, Per: e.per})
		}
	}
	if len(bs) == 0 {
		return release, nil, nil
	}
	i, wait, err := take(ctx, bs)
	switch {
	case err != nil:
		release()
		return nil, nil, err
	case i >= len(bs):
		release()
		return nil, nil, fmt.Errorf("limits: the store refused bucket %d of %d", i, len(bs))
	case i >= 0:
		release()
		// Rounded up to the millisecond: a retry after a wait rounded
		// down would come too early and be refused.
		if r := wait % time.Millisecond; r != 0 {
			wait += time.Millisecond - r
		}
		return nil, &Refusal{Limit: s.entries[bs[i].Entry].path, Kind: "calls", RetryAfter: max(wait, time.Millisecond)}, nil
	}
	return release, nil, nil
}

// enter takes the call's places among the calls at once of every bound
// that applies to it, or none when one of them is full.
func (s *Set) enter(c Call) (release func(), refused *Refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var held []heldKey
	for _, e := range s.entries {
		if e.concurrent > 0 && e.applies(c) {
			key := e.key(c)
			if e.inFlight[key] >= e.concurrent {
				return nil, &Refusal{Limit: e.path, Kind: "concurrent", RetryAfter: ConcurrentRetryAfter}
			}
			held = append(held, heldKey{e, key})
		}
	}
	for _, h := range held {
		h.e.inFlight[h.key]++
	}
	if len(held) == 0 {
		return func() {}, nil
	}
	var once sync.Once
	return func() { once.Do(func() { s.leave(held) }) }, nil
}

// digest is what a shared store names key by: a digest, so that no
// caller's subject is ever written there. A plain hash, not a keyed one:
// the workers share no key, and the store is the operator's.
func digest(key, by string) string {
	if by == setting.LimitByAgent {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}
