package statestore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlehq/heddle/config/setting"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/testredis"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/secrets"
	"github.com/heddlehq/heddle/statestore"
)

// openAt opens a redis store at url, of on_error onError, closed when the
// test ends.
func openAt(t testing.TB, url, onError string, timeoutMS int) *statestore.Store {
	t.Helper()
	t.Setenv("HEDDLE_TEST_REDIS_URL", url)
	ref := setting.Ref{Scheme: "env", Name: "HEDDLE_TEST_REDIS_URL"}
	s, err := statestore.Open(context.Background(), plan.ServeState{Kind: setting.StateRedis, URLRef: &ref, Prefix: "t:", OnError: onError, TimeoutMS: timeoutMS},
		secrets.New(secrets.Options{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func take(t *testing.T, r *statestore.Rates, bs ...runtime.RateBucket) (int, time.Duration) {
	t.Helper()
	i, wait, err := r.TakeRates(context.Background(), bs)
	if err != nil {
		t.Fatalf("TakeRates: %v", err)
	}
	return i, wait
}

// TestRatesAreATokenBucket: {calls: 2, per: 200ms} admits a burst of two,
// refuses the third with the wait until the next token (at most 100 ms),
// and admits one call once that wait has passed, one only.
func TestRatesAreATokenBucket(t *testing.T) {
	srv := testredis.Start(t)
	r := openAt(t, srv.URL(), "closed", 500).Rates()
	b := runtime.RateBucket{Agent: "support", Entry: 0, By: "agent", Calls: 2, Per: 200 * time.Millisecond}
	for n := range 2 {
		if i, _ := take(t, r, b); i != -1 {
			t.Fatalf("call %d of the burst refused", n+1)
		}
	}
	i, wait := take(t, r, b)
	if i != 0 || wait <= 0 || wait > 100*time.Millisecond {
		t.Fatalf("third call: refused %d, wait %v, want bucket 0 after at most 100ms", i, wait)
	}
	time.Sleep(wait)
	if i, _ := take(t, r, b); i != -1 {
		t.Errorf("refused after the wait it was given (%v)", wait)
	}
	if i, wait := take(t, r, b); i != 0 || wait < 90*time.Millisecond {
		t.Errorf("the token after it: refused %d after %v, want a wait of about 100ms", i, wait)
	}
}

// TestRatesAllOrNothing: a call one bucket refuses takes nothing from the
// others, and the refusal names the bucket that would admit it last.
func TestRatesAllOrNothing(t *testing.T) {
	srv := testredis.Start(t)
	r := openAt(t, srv.URL(), "closed", 500).Rates()
	agent := runtime.RateBucket{Agent: "support", Entry: 0, By: "agent", Calls: 3, Per: time.Minute}
	alice := runtime.RateBucket{Agent: "support", Entry: 1, By: "caller", Key: "aliceDigest00000", Calls: 1, Per: time.Hour}
	if i, _ := take(t, r, agent, alice); i != -1 {
		t.Fatal("the first call was refused")
	}
	for range 5 {
		if i, wait := take(t, r, agent, alice); i != 1 || wait < 59*time.Minute {
			t.Fatalf("alice again: refused %d after %v, want bucket 1 after about an hour", i, wait)
		}
	}
	// The agent's bucket gave one token, not six: two are left.
	bob := alice
	bob.Key = "bobDigest0000000"
	carol := alice
	carol.Key = "carolDigest00000"
	dave := alice
	dave.Key = "daveDigest000000"
	for _, who := range []runtime.RateBucket{bob, carol} {
		if i, _ := take(t, r, agent, who); i != -1 {
			t.Errorf("%s refused: the agent's refused calls were counted", who.Key)
		}
	}
	if i, wait := take(t, r, agent, dave); i != 0 || wait < 19*time.Second || wait > 20*time.Second {
		t.Errorf("the fourth caller: refused %d after %v, want bucket 0 after 20s less the time the test took", i, wait)
	}
}

// TestRatesKeys: a bucket's key is the prefix, the agent (":" escaped), the
// entry and the digest; it expires when its bucket is full again.
func TestRatesKeys(t *testing.T) {
	srv := testredis.Start(t)
	s := openAt(t, srv.URL(), "closed", 500)
	r := s.Rates()
	take(t, r, runtime.RateBucket{Agent: "a:b", Entry: 2, By: "caller", Key: "Xq3digest0000000", Calls: 4, Per: 2 * time.Second})
	take(t, r, runtime.RateBucket{Agent: "ops", Entry: 0, By: "agent", Calls: 10, Per: time.Minute})
	ctx := context.Background()
	keys, err := s.Client().Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"t:rate:a%3Ab:2:caller:Xq3digest0000000": 500 * time.Millisecond, "t:rate:ops:0:agent": 6 * time.Second}
	if len(keys) != len(want) {
		t.Fatalf("keys %q, want %d", keys, len(want))
	}
	for k, fill := range want {
		ttl, err := s.Client().PTTL(ctx, k).Result()
		if err != nil || ttl <= fill-100*time.Millisecond || ttl > fill {
			t.Errorf("%s: PTTL %v (%v), want the time to fill one token, %v", k, ttl, err, fill)
		}
	}
	time.Sleep(600 * time.Millisecond)
	if n, _ := s.Client().Exists(ctx, "t:rate:a%3Ab:2:caller:Xq3digest0000000").Result(); n != 0 {
		t.Error("a full bucket's key is still there")
	}
}

// TestRatesFleet: eight clients, as eight workers, take from one bucket of
// {calls: 10} at once, 20 calls each: 10 are admitted in all.
func TestRatesFleet(t *testing.T) {
	srv := testredis.Start(t)
	b := runtime.RateBucket{Agent: "support", Entry: 0, By: "agent", Calls: 10, Per: time.Hour}
	var (
		mu       sync.Mutex
		admitted int
		wg       sync.WaitGroup
	)
	for range 8 {
		r := openAt(t, srv.URL(), "closed", 1000).Rates()
		for range 20 {
			wg.Go(func() {
				i, _, err := r.TakeRates(context.Background(), []runtime.RateBucket{b})
				if err != nil {
					t.Error(err)
				}
				if i == -1 {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if admitted != 10 {
		t.Errorf("admitted %d of 160, want 10", admitted)
	}
}

// TestRatesAfterARestart: a Redis restarted has lost the script and the
// buckets; the next call sends the script again and counts from full
// buckets.
func TestRatesAfterARestart(t *testing.T) {
	srv := testredis.Start(t)
	s := openAt(t, srv.URL(), "closed", 500)
	r := s.Rates()
	b := runtime.RateBucket{Agent: "support", Entry: 0, By: "agent", Calls: 1, Per: time.Hour}
	take(t, r, b)
	if i, _ := take(t, r, b); i != 0 {
		t.Fatal("the second call was admitted")
	}
	srv.Stop()
	_, _, err := r.TakeRates(context.Background(), []runtime.RateBucket{b})
	if diag.CodeOf(err) != diag.StateUnavailable {
		t.Fatalf("Redis stopped: %v, want STATE_UNAVAILABLE", err)
	}
	srv.Start()
	if i, _ := take(t, r, b); i != -1 {
		t.Error("Redis restarted, empty: refused")
	}
	if i, _ := take(t, r, b); i != 0 {
		t.Error("the bucket is counted again: admitted a second call")
	}
}

// TestRatesNeverHang: a store that accepts connections and never answers
// costs a call serve.state.timeout_ms, STATE_UNAVAILABLE, and the store is
// down.
func TestRatesNeverHang(t *testing.T) {
	s := openAt(t, testredis.Silent(t), "closed", 150)
	start := time.Now()
	_, _, err := s.Rates().TakeRates(context.Background(), []runtime.RateBucket{{Agent: "a", By: "agent", Calls: 1, Per: time.Second}})
	took := time.Since(start)
	if diag.CodeOf(err) != diag.StateUnavailable || !strings.Contains(err.Error(), "timeout_ms") {
		t.Errorf("a store that never answers: %v, want STATE_UNAVAILABLE naming timeout_ms", err)
	}
	if took > 400*time.Millisecond {
		t.Errorf("took %v, want about timeout_ms (150ms)", took)
	}
	if d, _ := s.Dependency(); d.State != driver.StateDown {
		t.Errorf("dependency %+v, want down", d)
	}
}

// TestRatesMemory: a store of kind memory has no rates to share.
func TestRatesMemory(t *testing.T) {
	s, err := statestore.Open(context.Background(), plan.ServeState{Kind: setting.StateMemory}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Rates(); r != nil {
		t.Errorf("memory: rates %v, want nil", r)
	}
}
