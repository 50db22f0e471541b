package a2alive_test

import (
	"context"
	"testing"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// TestClassificationOverride: an agent's tool is not destructive unless
// the operator says so in ai.a2a_agents.<agent>.classification; then it is
// classified by the override, and approval: ask holds its calls.
func TestClassificationOverride(t *testing.T) {
	f := newFakeAgent(t, nil)
	_, ts := open(t, api("echo", f.srv.URL, "      classification: {destructive: true}\n"),
		"capabilities: [{kind: a2a, agent: echo}]\npolicies: {approval: ask}\n")
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || !tools[0].Destructive || tools[0].ClassifiedBy != driver.ClassifiedByOverride {
		t.Fatalf("tools = %+v, want one destructive tool classified by override", tools)
	}
	if res := call(t, ts, "hello"); runtime.RefusalCode(res) != diag.ToolApprovalRequired {
		t.Errorf("call: %q (code %q), want %s", text(res), runtime.RefusalCode(res), diag.ToolApprovalRequired)
	}

	_, ts = open(t, api("echo", f.srv.URL, ""), "capabilities: [{kind: a2a, agent: echo}]\npolicies: {approval: ask}\n")
	tools, _ = ts.Tools(context.Background())
	if len(tools) != 1 || tools[0].Destructive || tools[0].ClassifiedBy != driver.ClassifiedByServer {
		t.Fatalf("tools = %+v, want one tool classified by its source, not destructive", tools)
	}
	if res := call(t, ts, "hello"); res.IsError {
		t.Errorf("call refused: %q", text(res))
	}
}
