package limits_test

import (
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/limits"
	"github.com/heddlehq/heddle/plan"
)

// FuzzNew: any entry an operator can write is either refused with
// POLICY_INVALID or compiles to a set whose Admit and release do not
// panic, and whose refusals carry a positive retry-after.
func FuzzNew(f *testing.F) {
	f.Add(60, "1m", 0, "caller", "deploy_*", "deploy_x")
	f.Add(0, "", 8, "", "", "t")
	f.Add(1, "1ns", 0, "tool", "[", "t")
	f.Add(1<<30, "9999h", 0, "agent", "", "")
	f.Add(-1, "-1s", -1, "tenant", "", "t")
	f.Fuzz(func(t *testing.T, calls int, per string, concurrent int, by, glob, tool string) {
		l := plan.Limit{Calls: calls, Per: per, Concurrent: concurrent, By: by}
		if glob != "" {
			l.Tools = []string{glob}
		}
		s, ds := limits.New([]plan.Limit{l, l}, "policies.limits")
		for _, d := range ds {
			if d.Code != diag.PolicyInvalid {
				t.Fatalf("code %s", d.Code)
			}
		}
		if ds.HasErrors() {
			return
		}
		now := time.Unix(0, 0)
		for i := range 3 {
			release, r := s.Admit(now.Add(time.Duration(i)*time.Millisecond), limits.Call{Caller: tool, Tool: tool, OriginalName: tool})
			if r != nil {
				if r.RetryAfter <= 0 {
					t.Fatalf("refusal %+v without a positive retry-after", r)
				}
				continue
			}
			release()
		}
	})
}
