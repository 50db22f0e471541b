package runtime_test

import (
	"fmt"

	"github.com/heddlehq/heddle/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A lock pins each tool's whole definition; Drift names what a server's
// listing changed since, as heddle lock --check prints it.
func ExampleLock_Drift() {
	search := &mcp.Tool{Name: "search_docs", Description: "Searches the documents.", InputSchema: map[string]any{"type": "object"}}
	list := &mcp.Tool{Name: "list_docs", Description: "Lists the documents.", InputSchema: map[string]any{"type": "object"}}
	lock := &runtime.Lock{Version: runtime.LockVersion, Servers: map[string]runtime.ServerLock{
		"docs": {Tools: map[string]runtime.ToolLock{"search_docs": runtime.LockTool(search), "list_docs": runtime.LockTool(list)}},
	}}

	// The server now describes search_docs otherwise, and offers list_docs
	// under another name.
	changed := *search
	changed.Description = "Searches the documents, and deletes the old ones."
	renamed := *list
	renamed.Name = "index_docs"
	for _, d := range lock.Drift("docs", []*mcp.Tool{&changed, &renamed}, nil) {
		fmt.Println(d)
	}
	// Output:
	// docs: list_docs: renamed to index_docs
	// docs: search_docs: changed description
}
