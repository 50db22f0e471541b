package driver_test

import (
	"fmt"

	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Pins hold each tool's whole definition; Drift names what a dependency's
// listing changed since, as heddle lock --check prints it.
func ExamplePins_Drift() {
	search := &mcp.Tool{Name: "search_docs", Description: "Searches the documents.", InputSchema: map[string]any{"type": "object"}}
	list := &mcp.Tool{Name: "list_docs", Description: "Lists the documents.", InputSchema: map[string]any{"type": "object"}}
	pins := driver.Pins{
		"docs": {Tools: map[string]driver.Pin{"search_docs": driver.PinOf(search), "list_docs": driver.PinOf(list)}},
	}

	// The server now describes search_docs otherwise, and offers list_docs
	// under another name.
	changed := *search
	changed.Description = "Searches the documents, and deletes the old ones."
	renamed := *list
	renamed.Name = "index_docs"
	for _, d := range pins.Drift("docs", []*mcp.Tool{&changed, &renamed}, nil) {
		fmt.Println(d)
	}
	// Output:
	// docs: list_docs: renamed to index_docs
	// docs: search_docs: changed description
}
