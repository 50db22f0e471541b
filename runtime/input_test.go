package runtime_test

//lint:file-ignore SA1019 roots and sampling are deprecated from protocol 2026-07-28 on, but servers and hosts still ask for and give them: a server's requests for input pass through.

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// inputServer is a server of protocol 2026-07-28 whose tools ask for input
// (input_required) as MCP's multi-round-trip requests do: ask_name asks an
// elicitation and greets the name, ask_model asks for sampling, always_ask
// asks every time, needs_sampling refuses a caller that did not declare
// sampling (-32021). rounds counts the calls it received.
func inputServer(t *testing.T, rounds *atomic.Int32) func(string) mcp.Transport {
	name := func(req *mcp.CallToolRequest) string {
		if r, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult); ok && r.Action == "accept" {
			n, _ := r.Content["name"].(string)
			return n
		}
		return ""
	}
	ask := mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}
	return func(string) mcp.Transport {
		srv := mcp.NewServer(&mcp.Implementation{Name: "asker"}, nil)
		srv.AddTool(&mcp.Tool{Name: "ask_name", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			rounds.Add(1)
			if n := name(req); n != "" && req.Params.RequestState == "asked" {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + n}}}, nil
			}
			if r, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult); ok {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no name: " + r.Action}}}, nil
			}
			return &mcp.CallToolResult{InputRequests: ask, RequestState: "asked"}, nil
		})
		srv.AddTool(&mcp.Tool{Name: "always_ask", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			rounds.Add(1)
			return &mcp.CallToolResult{InputRequests: ask}, nil
		})
		srv.AddTool(&mcp.Tool{Name: "ask_model", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			rounds.Add(1)
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "capital of France?"}}}}}}, nil
		})
		srv.AddTool(&mcp.Tool{Name: "needs_sampling", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			rounds.Add(1)
			if caps := req.ClientCapabilities(); caps != nil && caps.Sampling != nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled"}}}, nil
			}
			data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}})
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "sampling required", Data: data}
		})
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(context.Background(), st, nil)
		if err != nil {
			t.Errorf("in-memory server: %v", err)
			return ct
		}
		t.Cleanup(func() { _ = ss.Close() })
		return ct
	}
}

const inputAPI = `
ai:
  mcp_servers:
    asker: {transport: stdio, command: asker}
`

var inputAgents = map[string]string{"x": "capabilities: [{kind: mcp, server: asker}]\n"}

// TestServerInputAnswered: a server's input_required is answered by the
// mcp kind's handlers and the call resumed with the answer and the
// server's state; without a handler an elicitation is declined.
func TestServerInputAnswered(t *testing.T) {
	var rounds atomic.Int32
	dial := inputServer(t, &rounds)
	var asked atomic.Int32
	rt := openWith(t, inputAPI, inputAgents, runtime.Options{Kinds: testkinds.MCP(func(k *mcplive.Kind) {
		k.Dial = dial
		k.Elicitation = func(_ context.Context, server string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			if server != "asker" || req.Params.Message != "Your name?" {
				t.Errorf("elicitation from %s: %q", server, req.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}
	})})
	res := mustCall(t, toolsetOf(t, rt, "x"), "ask_name", nil)
	if got := res.Content[0].(*mcp.TextContent).Text; got != "hello Ada" || asked.Load() != 1 || rounds.Load() != 2 {
		t.Errorf("ask_name: %q after %d elicitations and %d rounds, want \"hello Ada\" after 1 and 2", got, asked.Load(), rounds.Load())
	}

	rounds.Store(0)
	declined := openWith(t, inputAPI, inputAgents, runtime.Options{Kinds: testkinds.MCP(func(k *mcplive.Kind) { k.Dial = dial })})
	res = mustCall(t, toolsetOf(t, declined, "x"), "ask_name", nil)
	if got := res.Content[0].(*mcp.TextContent).Text; got != "no name: decline" {
		t.Errorf("ask_name without an elicitation handler: %q, want the server's answer to a decline", got)
	}
}

// TestServerInputUnanswered: input heddle cannot give, and a server that
// asks without end, refuse the call with MCP_INPUT_UNANSWERED; a server's
// -32021 is MCP_CAPABILITY_REQUIRED with what it requires.
func TestServerInputUnanswered(t *testing.T) {
	var rounds atomic.Int32
	rt := openWith(t, inputAPI, inputAgents, runtime.Options{Kinds: testkinds.MCP(func(k *mcplive.Kind) {
		k.Dial = inputServer(t, &rounds)
		k.Elicitation = func(context.Context, string, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}
	})})
	ts := toolsetOf(t, rt, "x")
	res := wantRefusal(t, ts, "ask_model", nil, diag.MCPInputUnanswered)
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "no sampling handler") {
		t.Errorf("ask_model: %q", text)
	}
	rounds.Store(0)
	wantRefusal(t, ts, "always_ask", nil, diag.MCPInputUnanswered)
	if n := rounds.Load(); n != 10 {
		t.Errorf("always_ask was sent %d times, want 10 (the bound)", n)
	}
	res = wantRefusal(t, ts, "needs_sampling", nil, diag.MCPCapabilityRequired)
	if req, _ := res.Meta["requiredCapabilities"].(map[string]any); req["sampling"] == nil {
		t.Errorf("requiredCapabilities %v, want sampling among them", res.Meta["requiredCapabilities"])
	}
}

// TestServerInputPassed: a call given runtime.WithInput returns the
// server's input_required to its caller, declares the caller's
// capabilities, and resumes with the caller's answers and the server's
// state.
func TestServerInputPassed(t *testing.T) {
	var rounds atomic.Int32
	rt := openWith(t, inputAPI, inputAgents, runtime.Options{Kinds: testkinds.MCP(func(k *mcplive.Kind) { k.Dial = inputServer(t, &rounds) })})
	ts := toolsetOf(t, rt, "x")
	first, err := ts.Call(t.Context(), "ask_name", nil, runtime.WithInput(&driver.Input{}))
	if err != nil || first.InputRequests["name"] == nil || first.RequestState != "asked" {
		t.Fatalf("first round: %+v, %v; want the server's input_required", first, err)
	}
	res, err := ts.Call(t.Context(), "ask_name", nil, runtime.WithInput(&driver.Input{State: first.RequestState,
		Responses: mcp.InputResponseMap{"name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}}}))
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "hello Grace" {
		t.Fatalf("resumed: %+v, %v; want hello Grace", res, err)
	}
	res, err = ts.Call(t.Context(), "needs_sampling", nil, runtime.WithInput(&driver.Input{Capabilities: map[string]any{"sampling": map[string]any{}}}))
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "sampled" {
		t.Fatalf("needs_sampling with the caller's sampling declared: %+v, %v", res, err)
	}
}
