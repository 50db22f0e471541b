package mcpfacade_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/mcpfacade"
	"github.com/heddlehq/heddle/runtime"
)

// failing is a toolset whose calls fail: coded ends with a coded error,
// uncoded with one that carries no code and says more than a model may
// read.
type failing struct{}

func (failing) Tools(context.Context) ([]runtime.Tool, error) {
	return []runtime.Tool{
		{Name: "coded", InputSchema: map[string]any{"type": "object"}},
		{Name: "uncoded", InputSchema: map[string]any{"properties": map[string]any{}}}, // no type: given one
		{Name: "odd", InputSchema: map[string]any{"type": "string"}},                   // not an object: any object
	}, nil
}

func (failing) Call(_ context.Context, name string, _ map[string]any, _ ...runtime.CallOption) (*mcp.CallToolResult, error) {
	if name == "coded" {
		return nil, diag.New(diag.ToolTimeout, "coded did not finish within tool_timeout_ms (25000 ms)")
	}
	return nil, errors.New("dial tcp 10.1.2.3:5432: password=hunter2 refused")
}

// TestCallErrorsAreRefusals: a call that ends with an error is a refusal
// the model reads, with the error's code; an error without a code is
// TOOL_UNAVAILABLE and its text is not passed on. Tools whose input schema
// is not an object schema are still offered.
func TestCallErrorsAreRefusals(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- mcpfacade.Serve(ctx, failing{}, st, &mcpfacade.Options{Agent: "f"}) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(); <-served }()
	var n int
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := tool.InputSchema.(map[string]any); s["type"] != "object" {
			t.Errorf("%s's input schema %v is not an object schema", tool.Name, tool.InputSchema)
		}
		n++
	}
	if n != 3 {
		t.Errorf("%d tools listed, want 3", n)
	}
	for name, want := range map[string]diag.Code{"coded": diag.ToolTimeout, "uncoded": diag.ToolUnavailable} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !res.IsError || runtime.RefusalCode(res) != want {
			t.Errorf("%s: isError %v, code %q, want a %s refusal", name, res.IsError, runtime.RefusalCode(res), want)
		}
		if strings.Contains(plantest.Text(res), "hunter2") || strings.Contains(plantest.Text(res), "10.1.2.3") {
			t.Errorf("%s: the refusal passes the error's text on: %q", name, plantest.Text(res))
		}
	}
	// Arguments that are not an object are refused before the toolset.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "coded", Arguments: []int{1}})
	if err != nil || runtime.RefusalCode(res) != diag.ToolArgsInvalid {
		t.Errorf("arguments [1]: %v %v, want TOOL_ARGS_INVALID", res, err)
	}
}
