package setting_test

import (
	"fmt"

	"github.com/heddlehq/heddle/config/setting"
)

// A secret is written as a reference to it; anything else parses into a Ref
// that says why it is not one, and keeps nothing of the value.
func ExampleParseRef() {
	for _, s := range []string{"${secrets:/heddle/catalog/token}", "${env:CATALOG_TOKEN}", "hunter2", "${vault:x}"} {
		if r := setting.ParseRef(s); r.Valid() {
			fmt.Println("reference:", r)
		} else {
			fmt.Println("refused:", r.Problem)
		}
	}
	// Output:
	// reference: ${secrets:/heddle/catalog/token}
	// reference: ${env:CATALOG_TOKEN}
	// refused: a literal value where a secret reference belongs
	// refused: a secret reference with an unknown scheme (want secrets, env or file)
}

// Paths name settings in diagnostics: keys joined with dots, list items in
// brackets, and a key that holds a dot quoted.
func ExampleJoin() {
	fmt.Println(setting.Item(setting.Join("policies", "rules"), 2))
	fmt.Println(setting.Join("ai.mcp_servers", "run.books", "url"))
	// Output:
	// policies.rules[2]
	// ai.mcp_servers["run.books"].url
}
