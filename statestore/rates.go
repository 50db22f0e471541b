package statestore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
)

// Rates counts the rates of policies.limits for a fleet (runtime's
// Options.Rates): each rate entry of an agent, for each key it counts by,
// is one Redis key, decided by one script that admits a call against all
// of the call's entries or none. It is safe for concurrent use.
//
// A bucket is kept as GCRA keeps a token bucket: one number, the time at
// which the bucket will be full again (its theoretical arrival time, TAT,
// in microseconds). A bucket of calls tokens refilled at calls per per
// hands out one token every per/calls; a call is admitted when TAT, after
// the call, is at most per ahead of now, and then TAT moves on by
// per/calls. That is golang.org/x/time/rate's bucket, a burst of calls
// then one every per/calls, as one worker counts it. A key expires when
// its bucket is full again, which is the same as no key: Redis holds a key
// only for a caller (or tool) that called within its entry's per.
//
// Keys are serve.state.prefix + "rate:" + agent + ":" + the entry's index
// + ":" + by [+ ":" + a digest of the caller's subject or the tool's
// name]: "heddle:rate:support:0:caller:Xq3…".
type Rates struct {
	s *Store
}

// Rates returns the store's rate counters; nil when the store is not
// shared (kind memory: each worker counts its own).
func (s *Store) Rates() *Rates {
	if !s.Shared() {
		return nil
	}
	return &Rates{s: s}
}

// takeScript decides a call against its buckets.
//
// KEYS are the buckets; ARGV[2i-1] and ARGV[2i] are bucket i's interval
// between tokens (per/calls) and per, in microseconds. It returns {0, 0}
// when every bucket admitted the call, each having given a token, or
// {i, wait}: bucket i (from 1) would admit it last, in wait microseconds,
// and no bucket gave anything.
//
// The clock is Redis's own (TIME), not the workers': a bucket's TAT is
// written by one worker and read by the others, and workers' clocks
// differ, by milliseconds under NTP and by more without it; a worker ahead
// of the others would see buckets refill early, one behind would refuse
// calls another admits. One clock for every reader is what makes the count
// exact. (Since Redis 5 a script replicates its writes, not itself, so a
// script may read TIME before it writes.)
var takeScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tats, worst, wait = {}, 0, 0
for i = 1, #KEYS do
  local interval, per = tonumber(ARGV[2*i-1]), tonumber(ARGV[2*i])
  local tat = tonumber(redis.call('GET', KEYS[i])) or now
  if tat < now then tat = now end
  tat = tat + interval
  if tat - per - now > wait then worst, wait = i, tat - per - now end
  tats[i] = tat
end
if worst > 0 then return {worst, math.ceil(wait)} end
for i = 1, #KEYS do
  local ttl = math.max(1, math.ceil((tats[i] - now) / 1000))
  redis.call('SET', KEYS[i], string.format('%.17g', tats[i]), 'PX', string.format('%d', ttl))
end
return {0, 0}
`)

// TakeRates decides a call against buckets in Redis (runtime.RateStore),
// within ctx and serve.state.timeout_ms. It runs the script by its digest
// (EVALSHA), and sends it whole when Redis does not have it (after a
// restart). A failure is STATE_UNAVAILABLE, and makes the store down until
// an operation succeeds; unless it is ctx's own end, which says nothing of
// the store.
func (r *Rates) TakeRates(ctx context.Context, buckets []runtime.RateBucket) (refused int, retryAfter time.Duration, err error) {
	keys := make([]string, len(buckets))
	args := make([]any, 0, 2*len(buckets))
	for i, b := range buckets {
		keys[i] = r.key(b)
		per := float64(b.Per) / float64(time.Microsecond)
		args = append(args, strconv.FormatFloat(per/float64(b.Calls), 'g', -1, 64), strconv.FormatFloat(per, 'g', -1, 64))
	}
	bctx, cancel := r.s.Bounded(ctx)
	defer cancel()
	res, err := takeScript.Run(bctx, r.s.rdb, keys, args...).Int64Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("an answer of %d values to the rate script, not 2", len(res))
	}
	if err != nil {
		if ctx.Err() != nil {
			return -1, 0, diag.Wrap(diag.StateUnavailable, err, "the call ended before the state store (serve.state, redis) counted policies.limits")
		}
		return -1, 0, r.s.Observe(err, "counting policies.limits")
	}
	_ = r.s.Observe(nil, "")
	if res[0] == 0 {
		return -1, 0, nil
	}
	return int(res[0]) - 1, time.Duration(res[1]) * time.Microsecond, nil
}

// OpenOnError reports serve.state.on_error: open.
func (r *Rates) OpenOnError() bool { return r.s.OpenOnError() }

// key is a bucket's key. Agent names are directory names: a ":" in one is
// escaped, so that two agents' keys are never one.
func (r *Rates) key(b runtime.RateBucket) string {
	agent := keyEscaper.Replace(b.Agent)
	if b.Key == "" {
		return r.s.Key("rate", agent, strconv.Itoa(b.Entry), b.By)
	}
	return r.s.Key("rate", agent, strconv.Itoa(b.Entry), b.By, b.Key)
}

var keyEscaper = strings.NewReplacer("%", "%25", ":", "%3A")

var _ runtime.RateStore = (*Rates)(nil)
