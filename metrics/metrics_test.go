package metrics_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/runtime"
)

type noHealth struct{}

func (noHealth) Health() runtime.Report { return runtime.Report{Ready: true} }

// TestRateLimitedCounted: a TOOL_RATE_LIMITED refusal is counted by the
// limit that refused it, as well as among the calls by code.
func TestRateLimitedCounted(t *testing.T) {
	m := metrics.New()
	for range 3 {
		m.Observe(runtime.CallEvent{Agent: "x", Tool: "echo", Kind: "mcp", Server: "a", Code: diag.ToolRateLimited, Limit: "policies.limits[0]"})
	}
	m.Observe(runtime.CallEvent{Agent: "x", Tool: "echo", Kind: "mcp", Server: "a", Code: diag.ToolRateLimited, Limit: "ai.mcp_servers.a.max_concurrent"})
	m.Observe(runtime.CallEvent{Agent: "x", Tool: "echo", Kind: "mcp", Server: "a"})
	rec := httptest.NewRecorder()
	m.Handler(noHealth{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`heddle_tool_rate_limited_total{agent="x",limit="policies.limits[0]",server="a"} 3`,
		`heddle_tool_rate_limited_total{agent="x",limit="ai.mcp_servers.a.max_concurrent",server="a"} 1`,
		`heddle_calls_total{agent="x",code="TOOL_RATE_LIMITED",server="a",source="mcp"} 4`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Count(string(body), "heddle_tool_rate_limited_total{") != 2 {
		t.Errorf("calls that no limit refused are counted as limited:\n%s", body)
	}
}

// TestStateFallbacksCounted: each call admitted by a worker's own counts,
// the fleet's store down, is counted by agent.
func TestStateFallbacksCounted(t *testing.T) {
	m := metrics.New()
	m.StateFallback("x")
	m.StateFallback("x")
	rec := httptest.NewRecorder()
	m.Handler(noHealth{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if want := `heddle_state_fallbacks_total{agent="x"} 2`; !strings.Contains(string(body), want) {
		t.Errorf("metrics lack %s:\n%s", want, body)
	}
}

// TestAuditLostCounted: each audit record lost is counted.
func TestAuditLostCounted(t *testing.T) {
	m := metrics.New()
	m.AuditLost()
	rec := httptest.NewRecorder()
	m.Handler(noHealth{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if want := `heddle_audit_records_lost_total 1`; !strings.Contains(string(body), want) {
		t.Errorf("metrics lack %s:\n%s", want, body)
	}
}
