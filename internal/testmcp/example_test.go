package testmcp_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server in process, over in-memory transports, listing tools two per page.
func ExampleNewServer() {
	ctx := context.Background()
	srv := testmcp.NewServer(&testmcp.Options{PageSize: 2, NoFixedTools: true, NumTools: 3})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil) // the server first
	if err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { cs.Close(); ss.Wait() }()

	page, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, tool := range page.Tools {
		fmt.Println(tool.Name)
	}
	fmt.Println("more:", page.NextCursor != "")
	// Output:
	// tool_000
	// tool_001
	// more: true
}

// The same server over Streamable HTTP; /sse serves the legacy transport.
func ExampleHandler() {
	ctx := context.Background()
	ts := httptest.NewServer(testmcp.Handler(&testmcp.Options{Stateless: true}))
	defer ts.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   ts.URL + testmcp.StreamablePath,
		HTTPClient: &http.Client{Transport: tr},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.StructuredContent)
	// Output: map[sum:5]
}
