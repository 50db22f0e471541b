package health_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/health"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

type fixed runtime.Report

func (f fixed) Health() runtime.Report { return runtime.Report(f) }

func TestReady(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		rep    runtime.Report
		status int
	}{
		{"ready", runtime.Report{Ready: true, Dependencies: []driver.Dependency{{Name: "a", Kind: "mcp", State: driver.StateReady, Required: true}}}, 200},
		{"required down", runtime.Report{Ready: false, Dependencies: []driver.Dependency{{Name: "a", Kind: "mcp", State: driver.StateDown, Since: &since, Code: diag.ToolUnavailable, Required: true}}}, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			health.Register(mux, fixed(tc.rep))
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			var got runtime.Report
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got.Ready != tc.rep.Ready || len(got.Dependencies) != 1 || got.Dependencies[0].Code != tc.rep.Dependencies[0].Code {
				t.Fatalf("body %+v", got)
			}
			if s := tc.rep.Dependencies[0].Since; s != nil && (got.Dependencies[0].Since == nil || !got.Dependencies[0].Since.Equal(*s)) {
				t.Errorf("since %v, want %v", got.Dependencies[0].Since, s)
			}
			rec = httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest("GET", "/livez", nil))
			if rec.Code != 200 {
				t.Fatalf("livez %d", rec.Code)
			}
		})
	}
}

// flipping is a runtime whose one required dependency is down until it is
// re-checked.
type flipping struct {
	rechecks atomic.Int32
	deadline bool // the re-check's context had a deadline
}

func (f *flipping) Health() runtime.Report {
	st, ready := driver.StateDown, false
	if f.rechecks.Load() > 0 {
		st, ready = driver.StateReady, true
	}
	return runtime.Report{Ready: ready, Dependencies: []driver.Dependency{{Name: "a", Kind: "mcp", State: st, Required: true}}}
}

func (f *flipping) Recheck(ctx context.Context) {
	_, f.deadline = ctx.Deadline()
	f.rechecks.Add(1)
}

// TestReadyRechecks: a report that is not ready is checked again, within
// RecheckWait, before /readyz answers, so that a dependency that is back
// is ready on that probe; a report that is ready is answered as it is.
func TestReadyRechecks(t *testing.T) {
	f := &flipping{}
	mux := http.NewServeMux()
	health.Register(mux, f)
	for i, want := range []int{200, 200} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		if rec.Code != want {
			t.Fatalf("probe %d: status %d, want %d", i+1, rec.Code, want)
		}
	}
	if n := f.rechecks.Load(); n != 1 || !f.deadline {
		t.Errorf("%d re-checks (deadline %v), want one, bounded", n, f.deadline)
	}
}
