package mcpfacade_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/mcpfacade"
	"github.com/heddlehq/heddle/runtime"
)

// greeter is a toolset of one tool, greet, that greets the caller: what
// the example serves in place of a runtime's toolset.
type greeter struct{}

func (greeter) Tools(context.Context) ([]runtime.Tool, error) {
	return []runtime.Tool{{Name: "greet", Description: "Greets the caller.", ReadOnly: true,
		InputSchema: map[string]any{"type": "object"}}}, nil
}

func (greeter) Call(ctx context.Context, name string, _ map[string]any, _ ...runtime.CallOption) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, " + heddle.Caller(ctx).Subject}}}, nil
}

// A facade session over in-memory transports, with a go-sdk client as
// its host: the host lists the toolset's tools and calls one, as the
// session's caller. heddle mcp serves a runtime's toolset the same way, on
// an mcp.IOTransport of its standard input and output.
func ExampleServe() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() {
		served <- mcpfacade.Serve(ctx, greeter{}, st, &mcpfacade.Options{Agent: "greeter", Caller: heddle.Identity{Subject: "alice"}})
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cs.InitializeResult().ServerInfo.Name)
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(tool.Name, "read-only:", tool.Annotations.ReadOnlyHint)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	_ = cs.Close()
	fmt.Println("served:", <-served)
	// Output:
	// heddle/greeter
	// greet read-only: true
	// hello, alice
	// served: <nil>
}
