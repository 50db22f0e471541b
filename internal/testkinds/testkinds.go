// Package testkinds gives tests the built-in set of kinds with the mcp
// kind's own settings changed: servers dialed in memory, direct uses,
// eager connection, elicitation.
package testkinds

import (
	"testing"

	"github.com/heddlehq/heddle/builtin"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
)

// MCP returns the built-in live halves, the mcp kind's changed by set.
func MCP(set func(k *mcplive.Kind)) *runtime.KindSet {
	return builtin.Default().WithMCP(set).Runtime()
}

// InMemory returns the built-in live halves with every MCP server dialed
// to a new in-process test server with opts (testmcp.DialInMemory).
func InMemory(t testing.TB, opts *testmcp.Options) *runtime.KindSet {
	dial := testmcp.DialInMemory(t, opts)
	return MCP(func(k *mcplive.Kind) { k.Dial = dial })
}

// Uses returns the built-in live halves with the mcp kind opening uses
// for application code besides the registered use cases' (see
// mcplive.Kind.Uses).
func Uses(uses ...mcplive.Use) *runtime.KindSet {
	return MCP(func(k *mcplive.Kind) {
		base := k.Uses
		k.Uses = func() []mcplive.Use {
			var out []mcplive.Use
			if base != nil {
				out = base()
			}
			return append(out, uses...)
		}
	})
}
