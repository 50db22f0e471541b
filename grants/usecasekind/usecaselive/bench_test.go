package usecaselive_test

import (
	"context"
	"testing"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/usecase"
)

type benchIn struct {
	ID string `json:"id"`
}

type benchOut struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

func benchGet(ctx context.Context, in benchIn) (benchOut, error) {
	if heddle.Caller(ctx).Subject == "" {
		return benchOut{}, nil
	}
	return benchOut{ID: in.ID, Title: "Disk full on db-1"}, nil
}

func init() { usecase.Register("bench.get", benchGet, usecase.ReadOnly()) }

// BenchmarkUsecaseCall measures a use case called through a toolset — name
// lookup, policy, schema validation, strict decoding, encoding the result —
// against the Go function called directly. The difference is heddle's
// per-call overhead.
func BenchmarkUsecaseCall(b *testing.B) {
	ctx := heddle.WithCaller(context.Background(), alice)
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if out, err := benchGet(ctx, benchIn{ID: "INC-1"}); err != nil || out.ID != "INC-1" {
				b.Fatal(out, err)
			}
		}
	})
	for _, c := range []struct{ name, agent string }{
		{"toolset", `capabilities: [{kind: usecase, keys: [bench.get]}]`},
		{"toolset+rule", `
capabilities: [{kind: usecase, keys: [bench.get]}]
policies:
  rules: [{when: '!("sre" in caller.roles)', effect: deny}]
`},
	} {
		b.Run(c.name, func(b *testing.B) {
			ts := openToolset(b, "ai: {}\n", c.agent, runtime.Options{})
			args := map[string]any{"id": "INC-1"}
			b.ReportAllocs()
			for b.Loop() {
				res, err := ts.Call(ctx, "bench_get", args)
				if err != nil || res.IsError {
					b.Fatal(res, err)
				}
			}
		})
	}
}
