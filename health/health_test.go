package health_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/health"
	"github.com/heddlehq/heddle/runtime"
)

type fixed runtime.Report

func (f fixed) Health() runtime.Report { return runtime.Report(f) }

func TestReady(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rep    runtime.Report
		status int
	}{
		{"ready", runtime.Report{Ready: true, Dependencies: []runtime.Dependency{{Name: "a", Kind: "mcp", State: runtime.StateReady, Required: true}}}, 200},
		{"required down", runtime.Report{Ready: false, Dependencies: []runtime.Dependency{{Name: "a", Kind: "mcp", State: runtime.StateDown, Code: diag.ToolUnavailable, Required: true}}}, 503},
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
			rec = httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest("GET", "/livez", nil))
			if rec.Code != 200 {
				t.Fatalf("livez %d", rec.Code)
			}
		})
	}
}
