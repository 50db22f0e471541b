package serve

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/runtime"
)

// Agent is one agent as GET /v1/agents lists it: its name, its
// description, and how many tools its toolset offers now (a tool of a
// server that is down is not counted until it is back).
type Agent struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Tools       int    `json:"tools"`
}

// Tool is one tool as the invoke API and `heddle tools --format json`
// list it.
type Tool struct {
	Name         string `json:"name"`
	Source       string `json:"source"`
	Server       string `json:"server"`
	OriginalName string `json:"original_name"`
	Description  string `json:"description"`
	InputSchema  any    `json:"input_schema"`
	Destructive  bool   `json:"destructive"`
	ReadOnly     bool   `json:"read_only"`
	// Deferred marks, in `heddle tools`, a tool of a grant that says
	// defer: a conversation lists it once load_tools has loaded it.
	Deferred bool `json:"deferred,omitempty"`
	// ClassifiedBy says where Destructive and ReadOnly came from: server,
	// override or untrusted.
	ClassifiedBy string `json:"classified_by"`
}

// Tools returns tools as the invoke API lists them.
func Tools(tools []runtime.Tool) []Tool {
	out := make([]Tool, len(tools))
	for i, t := range tools {
		out[i] = Tool{Name: t.Name, Source: t.Source, Server: t.Server, OriginalName: t.OriginalName,
			Description: t.Description, InputSchema: t.InputSchema, Destructive: t.Destructive, ReadOnly: t.ReadOnly, ClassifiedBy: string(t.ClassifiedBy), Deferred: t.Deferred}
	}
	return out
}

// Result is a result in MCP's own shape, with isError always present (the
// SDK leaves it out when false): what the invoke API answers and `heddle
// call --format json` prints.
func Result(res *mcp.CallToolResult) any {
	b, err := json.Marshal(res)
	if err != nil {
		return res
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return res
	}
	m["isError"] = res.IsError
	return m
}
