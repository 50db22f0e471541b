package serve_test

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestRateLimitedOverHTTP: a call over an agent's policies.limits is
// answered as any refusal, a 200 whose result carries TOOL_RATE_LIMITED,
// the limit and retry_after_ms in its _meta; each caller has a budget of
// its own, and the refusal is counted by the limit that refused it.
func TestRateLimitedOverHTTP(t *testing.T) {
	f := startFront(t, trustLoopback+inMemoryServer, map[string]string{
		"a": "capabilities: [{kind: mcp, server: srv}]\npolicies:\n  limits:\n    - {calls: 1, per: 1h, by: caller}\n",
	})
	call := func(who string) *response {
		req := f.request("POST", "/v1/agents/a/tools/echo", `{"text":"hi"}`)
		req.Header.Set("X-Heddle-Subject", who)
		return f.send(req)
	}
	if r := call("alice"); r.status != 200 || r.contains(`"isError":true`) {
		t.Fatalf("alice's first call: %d %s", r.status, r.body)
	}
	r := call("alice")
	if got := codes(t, r); r.status != 200 || fmt.Sprint(got) != "[TOOL_RATE_LIMITED]" {
		t.Fatalf("alice's second call: %d %s", r.status, r.body)
	}
	var res struct {
		Meta struct {
			Limit        string  `json:"limit"`
			RetryAfterMS float64 `json:"retry_after_ms"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatal(err)
	}
	if res.Meta.Limit != "policies.limits[0]" || res.Meta.RetryAfterMS <= 3_500_000 || res.Meta.RetryAfterMS > 3_600_000 {
		t.Errorf("_meta %+v, want policies.limits[0] and about an hour", res.Meta)
	}
	if r := call("bob"); r.status != 200 || r.contains(`"isError":true`) {
		t.Errorf("bob's first call: %d %s", r.status, r.body)
	}
	if r := f.get("/metrics"); !r.contains(`heddle_tool_rate_limited_total{agent="a",limit="policies.limits[0]",server="srv"} 1`) {
		t.Errorf("metrics lack the refusal:\n%s", r.body)
	}
}
