package runtime_test

import (
	"context"
	"testing"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
)

// TestWithApprover: a call's own approver decides it in place of the
// runtime's, either way, and a nil one refuses the call even when the
// runtime's would approve it.
func TestWithApprover(t *testing.T) {
	t.Parallel()
	says := func(ok bool, asked *int) runtime.Approver {
		return func(_ context.Context, req runtime.ApprovalRequest) (bool, error) {
			*asked++
			if req.Tool.Name != "add_tool" || req.Caller.Subject != "alice" {
				t.Errorf("approval request %+v", req)
			}
			return ok, nil
		}
	}
	var runtimeAsked int
	rt := openWith(t, `
ai:
  startup_timeout_ms: 5000
  mcp_servers:
    a: {transport: stdio, command: $TESTMCP, args: [--destructive, add_tool]}
`, map[string]string{"x": "capabilities: [{kind: mcp, server: a}]\npolicies: {approval: ask}\n"},
		runtime.Options{Approver: says(true, &runtimeAsked)})
	ts := toolsetOf(t, rt, "x")
	ctx := heddle.WithCaller(context.Background(), heddle.Identity{Subject: "alice"})
	var callAsked int
	tests := []struct {
		name string
		opts []runtime.CallOption
		want diag.Code
	}{
		{"runtime's", nil, ""},
		{"call's/no", []runtime.CallOption{runtime.WithApprover(says(false, &callAsked))}, diag.ToolApprovalRequired},
		{"call's/yes", []runtime.CallOption{runtime.WithApprover(says(true, &callAsked))}, ""},
		{"call's/nil", []runtime.CallOption{runtime.WithApprover(nil)}, diag.ToolApprovalRequired},
	}
	for i, tc := range tests {
		res, err := ts.Call(ctx, "add_tool", map[string]any{"name": "made" + string(rune('a'+i))}, tc.opts...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := runtime.RefusalCode(res); got != tc.want {
			t.Errorf("%s: code %q (%s), want %q", tc.name, got, text(res), tc.want)
		}
	}
	if runtimeAsked != 1 || callAsked != 2 {
		t.Errorf("the runtime's approver was asked %d times, the calls' %d: want 1 and 2", runtimeAsked, callAsked)
	}
}
