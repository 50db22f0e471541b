package calldeadline

import (
	"context"
	"testing"
	"time"
)

// BenchmarkNew measures one call's scope as the runtime makes it: plain
// (stdio servers and use cases: one context.WithDeadlineCause) and
// lingering (HTTP servers: a callContext).
func BenchmarkNew(b *testing.B) {
	for _, linger := range []bool{false, true} {
		name := "plain"
		if linger {
			name = "linger"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				s := New(ctx, time.Now().Add(20*time.Second), linger)
				_ = s.Context().Done() // the SDK waits on it
				s.End(false)           // a success would linger a second; end it now
			}
		})
	}
}
