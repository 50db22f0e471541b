package calldeadline

import (
	"context"
	"testing"
	"time"
)

// BenchmarkNew measures one call's scope as the runtime makes it: one
// context.WithDeadlineCause, waited on and ended.
func BenchmarkNew(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s := New(ctx, time.Now().Add(20*time.Second))
		_ = s.Context().Done() // the transport waits on it
		s.End()
	}
}
