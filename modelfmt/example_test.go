package modelfmt_test

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/modelfmt"
	"github.com/heddlehq/heddle/runtime"
)

// A tool in OpenAI's strict mode, a model's call of it with a null for the
// optional argument it left out, and the result sent back.
func Example() {
	tools := []runtime.Tool{{
		Name:        "search_runbooks",
		Description: "Search runbooks",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"query": map[string]any{"type": "string"},
				"limit": map[string]any{"type": "integer"},
			},
			"required": []any{"query"},
		},
	}}
	r, err := modelfmt.New(modelfmt.OpenAIChat, tools, modelfmt.Options{Strict: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(r.Tools()))

	// One element of the assistant message's tool_calls.
	call, err := r.ParseCall([]byte(`{"id": "call_1", "type": "function",
		"function": {"name": "search_runbooks", "arguments": "{\"query\": \"disk\", \"limit\": null}"}}`))
	if err != nil {
		panic(err)
	}
	args, _ := json.Marshal(call.Args)
	fmt.Println(call.ID, call.Name, string(args))

	// What Toolset.Call returned, as the tool message to send back.
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "RB-101 disk full"}}}
	msg, err := r.Result(call, res)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(msg))
	// Output:
	// [{"type":"function","function":{"name":"search_runbooks","description":"Search runbooks","parameters":{"additionalProperties":false,"properties":{"limit":{"type":["integer","null"]},"query":{"type":"string"}},"required":["limit","query"],"type":"object"},"strict":true}}]
	// call_1 search_runbooks {"query":"disk"}
	// {"role":"tool","tool_call_id":"call_1","content":"RB-101 disk full"}
}
