package limits_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/heddlehq/heddle/internal/limits"
	"github.com/heddlehq/heddle/plan"
)

// fakeTake records what it was asked and answers as told.
type fakeTake struct {
	asked   [][]limits.Bucket
	refused int
	wait    time.Duration
	err     error
}

func (f *fakeTake) take(_ context.Context, bs []limits.Bucket) (int, time.Duration, error) {
	f.asked = append(f.asked, append([]limits.Bucket(nil), bs...))
	return f.refused, f.wait, f.err
}

// TestAdmitSharedAsksForTheRatesThatApply: the store is asked for each rate
// entry that applies to the call, named by its index and a digest of the
// key it counts by (never the caller's subject), with its rate; a bound on
// calls at once is not the store's.
func TestAdmitSharedAsksForTheRatesThatApply(t *testing.T) {
	s := mustNew(t,
		plan.Limit{Calls: 60, Per: "1m", By: "caller"},
		plan.Limit{Concurrent: 8},
		plan.Limit{Calls: 5, Per: "1h", Tools: []string{"deploy_*"}},
		plan.Limit{Calls: 2, Per: "1s", By: "tool"})
	f := &fakeTake{refused: -1}
	release, r, err := s.AdmitShared(context.Background(), limits.Call{Caller: "alice@example.com", Tool: "search"}, f.take)
	if err != nil || r != nil {
		t.Fatalf("admitted? %v %v", r, err)
	}
	release()
	if len(f.asked) != 1 {
		t.Fatalf("the store was asked %d times, want once", len(f.asked))
	}
	got := f.asked[0]
	want := []limits.Bucket{
		{Entry: 0, By: "caller", Key: got[0].Key, Calls: 60, Per: time.Minute},
		{Entry: 3, By: "tool", Key: got[1].Key, Calls: 2, Per: time.Second},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("buckets (-want +got):\n%s", diff)
	}
	for _, b := range got {
		if len(b.Key) != 16 || strings.Contains(b.Key, "alice") || strings.ContainsAny(b.Key, ":{}") {
			t.Errorf("key %q: want a 16-character digest", b.Key)
		}
	}
	if got[0].Key == got[1].Key {
		t.Error("the caller's and the tool's digests are one")
	}

	// The deploy entry applies to a deploy, by agent: no key.
	f.asked = nil
	release, _, _ = s.AdmitShared(context.Background(), limits.Call{Caller: "alice@example.com", Tool: "deploy_web"}, f.take)
	release()
	if bs := f.asked[0]; len(bs) != 3 || bs[1].Entry != 2 || bs[1].By != "agent" || bs[1].Key != "" {
		t.Errorf("a deploy's buckets %+v, want entries 0, 2 (by agent, no key) and 3", bs)
	}
	if n := s.Keys(); n != 0 {
		t.Errorf("the set holds %d keys of its own, want none: the store counts the rates", n)
	}
}

// TestAdmitSharedRefusalTakesNothing: a rate the store refuses gives back
// the call's place among calls at once, names the entry, and its wait,
// rounded up to the millisecond; a full bound on calls at once refuses
// without asking the store.
func TestAdmitSharedRefusalTakesNothing(t *testing.T) {
	s := mustNew(t, plan.Limit{Concurrent: 1}, plan.Limit{Calls: 1, Per: "1m"}, plan.Limit{Calls: 3, Per: "1s", By: "caller"})
	f := &fakeTake{refused: 1, wait: 333333334 * time.Nanosecond}
	_, r, err := s.AdmitShared(context.Background(), limits.Call{Caller: "bob"}, f.take)
	if err != nil || r == nil || r.Limit != "policies.limits[2]" || r.Kind != "calls" || r.RetryAfter != 334*time.Millisecond {
		t.Fatalf("refusal %+v (%v), want policies.limits[2]'s calls, after 334ms", r, err)
	}
	f.refused = -1
	release, r, err := s.AdmitShared(context.Background(), limits.Call{Caller: "bob"}, f.take)
	if err != nil || r != nil {
		t.Fatalf("the place at once was not given back: %v %v", r, err)
	}
	asked := len(f.asked)
	if _, r, _ := s.AdmitShared(context.Background(), limits.Call{Caller: "carol"}, f.take); r == nil || r.Kind != "concurrent" {
		t.Errorf("a second call at once: %+v, want the bound's refusal", r)
	}
	if len(f.asked) != asked {
		t.Error("the store was asked for a call a bound on calls at once refused")
	}
	release()
}

// TestAdmitSharedFailureTakesNothing: when the store fails, the error is
// returned and the call's places at once given back, so that the caller
// may admit it by the worker's own counts instead.
func TestAdmitSharedFailureTakesNothing(t *testing.T) {
	s := mustNew(t, plan.Limit{Concurrent: 1}, plan.Limit{Calls: 1, Per: "1m"})
	down := errors.New("store down")
	f := &fakeTake{err: down}
	if _, _, err := s.AdmitShared(context.Background(), limits.Call{}, f.take); !errors.Is(err, down) {
		t.Fatalf("err %v, want the store's", err)
	}
	release, r := s.Admit(time.Now(), limits.Call{})
	if r != nil {
		t.Fatalf("the worker's own counts after a failure: %v", r)
	}
	release()
	// The store is not asked when no rate applies.
	s = mustNew(t, plan.Limit{Concurrent: 1})
	release, r, err := s.AdmitShared(context.Background(), limits.Call{}, f.take)
	if err != nil || r != nil || len(f.asked) != 1 {
		t.Fatalf("bounds on calls at once alone: %v %v, store asked %d times", r, err, len(f.asked))
	}
	release()
}
