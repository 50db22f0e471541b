package heddlecmd_test

import (
	"fmt"
	"os"

	"github.com/heddlehq/heddle/heddlecmd"
)

// Run is the command with its arguments, without the program name; here it
// checks a small configuration, as `heddle check --config … --agents …`
// does.
func ExampleRun() {
	code := heddlecmd.Run([]string{
		"check",
		"--config", "testdata/example/config/api.yaml",
		"--agents", "testdata/example/agents",
	}, os.Stdout, os.Stderr, heddlecmd.Options{})
	fmt.Println("exit", code)
	// Output:
	// ok: 1 agent, 1 MCP server, 0 warnings
	// exit 0
}
