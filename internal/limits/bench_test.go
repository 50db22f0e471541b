package limits_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/heddlehq/heddle/config/setting"
	"github.com/heddlehq/heddle/internal/limits"
	"github.com/heddlehq/heddle/internal/testredis"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
	"github.com/heddlehq/heddle/statestore"
)

// BenchmarkAdmitRedis is one caller's admissions under {calls: 1e9, per:
// 1s, by: caller}: counted by the worker (memory), in a redis-server on
// loopback as a fleet counts them (redis), and, for scale, one PING on the
// same client (ping: the round trip alone). Each reports its median as
// median-ns/op, the figure docs/performance.md cites: the mean of a
// network round trip is its tail's.
func BenchmarkAdmitRedis(b *testing.B) {
	set, ds := limits.New([]plan.Limit{{Calls: 1e9, Per: "1s", By: "caller"}}, "policies.limits")
	if ds.HasErrors() {
		b.Fatal(ds.Err())
	}
	call := limits.Call{Caller: "alice@example.com", Tool: "search_runbooks"}
	srv := testredis.Start(b)
	b.Setenv("HEDDLE_BENCH_REDIS_URL", srv.URL())
	ref := setting.Ref{Scheme: "env", Name: "HEDDLE_BENCH_REDIS_URL"}
	st, err := statestore.Open(context.Background(), plan.ServeState{Kind: setting.StateRedis, URLRef: &ref, Prefix: "bench:", OnError: "closed", TimeoutMS: 1000},
		secrets.New(secrets.Options{}), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	rates := st.Rates()
	take := func(ctx context.Context, bs []limits.Bucket) (int, time.Duration, error) {
		rbs := make([]runtime.RateBucket, len(bs))
		for i, x := range bs {
			rbs[i] = runtime.RateBucket{Agent: "support", Entry: x.Entry, By: x.By, Key: x.Key, Calls: x.Calls, Per: x.Per}
		}
		return rates.TakeRates(ctx, rbs)
	}
	ctx := context.Background()
	for _, bc := range []struct {
		name  string
		admit func() error
	}{
		{"memory", func() error {
			release, r := set.Admit(time.Now(), call)
			if r != nil {
				return r
			}
			release()
			return nil
		}},
		{"redis", func() error {
			release, r, err := set.AdmitShared(ctx, call, take)
			if r != nil {
				return r
			}
			if err == nil {
				release()
			}
			return err
		}},
		{"ping", func() error { return st.Client().Ping(ctx).Err() }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var lat []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				if err := bc.admit(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "median-ns/op")
		})
	}
}
