package usecaselive

import (
	"context"
	"testing"

	"github.com/heddlehq/heddle/grants/usecasekind"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/usecase"
)

type layerIn struct {
	ID string `json:"id"`
}

type layerOut struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

func init() {
	usecase.Register("layer.get", func(_ context.Context, in layerIn) (layerOut, error) {
		return layerOut{ID: in.ID, Title: "Disk full on db-1"}, nil
	}, usecase.ReadOnly())
}

// BenchmarkSourceCall is this package's share of a use case call: strict
// decoding, the call and encoding the result, without the toolset (names,
// policy, validation, deadlines) around it.
func BenchmarkSourceCall(b *testing.B) {
	inst := &instance{log: nil}
	src, err := inst.Source(&plan.Agent{Name: "a"}, plan.Grant{Kind: KindName, Spec: &usecasekind.Grant{Keys: []string{"layer.get"}}})
	if err != nil {
		b.Fatal(err)
	}
	tools, _, _ := src.Tools(context.Background())
	var _ driver.Source = src
	ctx := context.Background()
	args := map[string]any{"id": "INC-1"}
	b.ReportAllocs()
	for b.Loop() {
		res, err := src.Call(ctx, tools[0], args, driver.CallOptions{})
		if err != nil || res.IsError {
			b.Fatal(res, err)
		}
	}
}
