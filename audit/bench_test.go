package audit_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/audit"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/runtime"
)

// BenchmarkCall measures what the audit trail costs a call through the
// runtime (an in-memory server's echo): without OnCall, and with the
// writer as OnCall; the difference is the cost per call.
func BenchmarkCall(b *testing.B) {
	p := plantest.Must(b, `
ai:
  mcp_servers:
    a: {transport: stdio, command: heddle-testmcp}
`, map[string]string{"x": `capabilities: [{kind: mcp, server: a}]`})
	for _, bc := range []struct {
		name  string
		audit bool
	}{{"off", false}, {"audit", true}} {
		b.Run(bc.name, func(b *testing.B) {
			opts := runtime.Options{Kinds: testkinds.InMemory(b, nil)}
			var w *audit.Writer
			if bc.audit {
				var err error
				w, err = audit.Open(audit.Options{Path: filepath.Join(b.TempDir(), "audit.jsonl"), Key: testKey})
				if err != nil {
					b.Fatal(err)
				}
				opts.OnCall, opts.DigestArgs = w.Observe, true
			}
			rt, err := runtime.Open(context.Background(), p, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			ts, _ := rt.Toolset("x")
			ctx := heddle.WithCaller(context.Background(), heddle.Identity{Subject: "alice", Roles: []string{"sre"}})
			args := map[string]any{"text": "disk full on db-7"}
			for b.Loop() {
				if _, err := ts.Call(ctx, "echo", args); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if w != nil {
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				if s := w.Stats(); s.Lost > 0 {
					b.Fatalf("%d records lost", s.Lost)
				}
			}
		})
	}
}
