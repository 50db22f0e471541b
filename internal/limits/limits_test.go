package limits_test

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/limits"
	"github.com/heddlehq/heddle/plan"
)

func mustNew(t *testing.T, ls ...plan.Limit) *limits.Set {
	t.Helper()
	s, ds := limits.New(ls, "policies.limits")
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	return s
}

// TestCheck: every malformed entry is POLICY_INVALID at the key at fault.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    plan.Limit
		want []string // paths
	}{
		{"rate", plan.Limit{Calls: 60, Per: "1m", By: "caller"}, nil},
		{"concurrent", plan.Limit{Concurrent: 8}, nil},
		{"scoped", plan.Limit{Calls: 5, Per: "1h", By: "tool", Tools: []string{"deploy_*"}}, nil},
		{"neither", plan.Limit{By: "agent"}, []string{"policies.limits[0]"}},
		{"both", plan.Limit{Calls: 1, Per: "1s", Concurrent: 2}, []string{"policies.limits[0]"}},
		{"calls without per", plan.Limit{Calls: 10}, []string{"policies.limits[0].per"}},
		{"per without calls", plan.Limit{Per: "1m"}, []string{"policies.limits[0].calls"}},
		{"negative calls", plan.Limit{Calls: -1, Per: "1m"}, []string{"policies.limits[0].calls"}},
		{"no unit", plan.Limit{Calls: 1, Per: "60"}, []string{"policies.limits[0].per"}},
		{"zero per", plan.Limit{Calls: 1, Per: "0s"}, []string{"policies.limits[0].per"}},
		{"negative per", plan.Limit{Calls: 1, Per: "-1m"}, []string{"policies.limits[0].per"}},
		{"negative concurrent", plan.Limit{Concurrent: -3}, []string{"policies.limits[0].concurrent"}},
		{"unknown by", plan.Limit{Concurrent: 1, By: "tenant"}, []string{"policies.limits[0].by"}},
		{"bad glob", plan.Limit{Concurrent: 1, Tools: []string{"a[", ""}}, []string{"policies.limits[0].tools[0]", "policies.limits[0].tools[1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ds := limits.New([]plan.Limit{tc.l}, "policies.limits")
			var got []string
			for _, d := range ds {
				if d.Code != diag.PolicyInvalid {
					t.Errorf("code %s at %s, want POLICY_INVALID", d.Code, d.Path)
				}
				got = append(got, d.Path)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
			if (s == nil) != (len(tc.want) > 0) {
				t.Errorf("set %v with diagnostics %v: want a set exactly when there are none", s, got)
			}
		})
	}
}

// TestNilSetAdmitsAll: no limits admit every call and hold nothing.
func TestNilSetAdmitsAll(t *testing.T) {
	s, ds := limits.New(nil, "policies.limits")
	if s != nil || ds != nil {
		t.Fatalf("New(nil) = %v, %v", s, ds)
	}
	release, r := s.Admit(time.Now(), limits.Call{Tool: "x"})
	if r != nil {
		t.Fatalf("refused: %v", r)
	}
	release()
}

// TestRate: 50 callers at once against {calls: 10, per: 1m}: 10 admitted,
// the rest told the exact wait for the next token; the bucket refills at
// one call every 6 s and never holds more than 10.
func TestRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustNew(t, plan.Limit{Calls: 10, Per: "1m", By: "agent"})
		admitted, refused := burst(s, 50, func(i int) limits.Call { return limits.Call{Caller: fmt.Sprint(i), Tool: "t"} })
		if admitted != 10 || len(refused) != 40 {
			t.Fatalf("admitted %d, refused %d, want 10 and 40", admitted, len(refused))
		}
		for _, r := range refused {
			if r.Limit != "policies.limits[0]" || r.Kind != "calls" || r.RetryAfter != 6*time.Second {
				t.Fatalf("refusal %+v, want policies.limits[0], calls, 6s", r)
			}
		}
		time.Sleep(3 * time.Second)
		if _, r := s.Admit(time.Now(), limits.Call{}); r == nil || r.RetryAfter != 3*time.Second {
			t.Fatalf("half a token in: refusal %+v, want a retry after 3s", r)
		}
		time.Sleep(3 * time.Second)
		if _, r := s.Admit(time.Now(), limits.Call{}); r != nil {
			t.Fatalf("a token later: refused %+v", r)
		}
		time.Sleep(time.Hour)
		if admitted, _ := burst(s, 50, func(int) limits.Call { return limits.Call{} }); admitted != 10 {
			t.Errorf("after an hour idle: admitted %d, want the burst of 10, no more", admitted)
		}
	})
}

// TestAllOrNothing: a call refused by one entry counts against none.
func TestAllOrNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustNew(t,
			plan.Limit{Calls: 100, Per: "1m", By: "agent"},
			plan.Limit{Calls: 2, Per: "1m", By: "caller"},
			plan.Limit{Concurrent: 50, By: "agent"})
		for range 10 {
			release, _ := s.Admit(time.Now(), limits.Call{Caller: "alice"})
			if release != nil {
				release()
			}
		}
		// alice: 2 admitted, 8 refused by her own entry; the agent's rate
		// lost 2 tokens, not 10, so bob's 98 more fit.
		n := 0
		for i := range 200 {
			if release, r := s.Admit(time.Now(), limits.Call{Caller: fmt.Sprint("bob", i)}); r == nil {
				n++
				release()
			}
		}
		if n != 98 {
			t.Errorf("the agent admitted %d more, want 98", n)
		}
	})
}

// TestConcurrent: a bound on calls at once admits as many as it allows,
// per key, until they are released.
func TestConcurrent(t *testing.T) {
	s := mustNew(t, plan.Limit{Concurrent: 3, By: "tool"})
	var held []func()
	for range 5 {
		release, r := s.Admit(time.Now(), limits.Call{Tool: "a"})
		if r != nil {
			if r.Kind != "concurrent" || r.RetryAfter != limits.ConcurrentRetryAfter {
				t.Errorf("refusal %+v", r)
			}
			continue
		}
		held = append(held, release)
	}
	if len(held) != 3 {
		t.Fatalf("admitted %d calls of a at once, want 3", len(held))
	}
	if release, r := s.Admit(time.Now(), limits.Call{Tool: "b"}); r != nil {
		t.Errorf("b refused while a is full: %v", r)
	} else {
		release()
	}
	held[0]()
	held[0]() // twice is once
	release, r := s.Admit(time.Now(), limits.Call{Tool: "a"})
	if r != nil {
		t.Fatalf("refused once a place freed: %v", r)
	}
	release()
	for _, h := range held[1:] {
		h()
	}
	if n := s.Keys(); n != 0 {
		t.Errorf("%d keys held with no call in flight, want 0", n)
	}
}

// TestBucketsBounded: buckets per caller never exceed MaxKeys, and those
// idle for a whole interval — full again — are dropped.
func TestBucketsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustNew(t, plan.Limit{Calls: 1, Per: "1m", By: "caller"})
		for i := range limits.MaxKeys + 500 {
			s.Admit(time.Now(), limits.Call{Caller: fmt.Sprint("c", i)})
		}
		if n := s.Keys(); n != limits.MaxKeys {
			t.Errorf("%d buckets after %d callers, want at most MaxKeys (%d)", n, limits.MaxKeys+500, limits.MaxKeys)
		}
		// The most recent caller is still counted.
		if _, r := s.Admit(time.Now(), limits.Call{Caller: fmt.Sprint("c", limits.MaxKeys+499)}); r == nil {
			t.Error("the last caller's bucket was forgotten")
		}
		time.Sleep(time.Minute)
		s.Admit(time.Now(), limits.Call{Caller: "late"})
		if n := s.Keys(); n != 1 {
			t.Errorf("%d buckets a minute later, want only the new caller's", n)
		}
	})
}

// burst makes n Admits at once from n goroutines, holding what they are
// admitted, and returns how many were admitted and the refusals.
func burst(s *limits.Set, n int, call func(int) limits.Call) (admitted int, refused []*limits.Refusal) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, r := s.Admit(time.Now(), call(i))
			mu.Lock()
			defer mu.Unlock()
			if r != nil {
				refused = append(refused, r)
			} else {
				admitted++
			}
		})
	}
	wg.Wait()
	return admitted, refused
}

// BenchmarkAdmit: one call admitted and released by a rate per caller and
// a bound on calls at once, from many goroutines.
func BenchmarkAdmit(b *testing.B) {
	s, _ := limits.New([]plan.Limit{
		{Calls: 1 << 30, Per: "1s", By: "caller"},
		{Concurrent: 1 << 20, By: "agent"},
	}, "policies.limits")
	callers := make([]string, 1000)
	for i := range callers {
		callers[i] = fmt.Sprint("caller", i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			release, r := s.Admit(time.Now(), limits.Call{Caller: callers[i%len(callers)], Tool: "t"})
			if r != nil {
				b.Fatal(r)
			}
			release()
			i++
		}
	})
}
