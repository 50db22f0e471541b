package driver

import (
	"crypto/sha256"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SameTools reports whether two listings hold the same tools, in the same
// order, with the same definitions: whether a new listing is a change to
// tell Events.Changed.
func SameTools(a, b []*mcp.Tool) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if toolHash(a[i]) != toolHash(b[i]) {
			return false
		}
	}
	return true
}

// toolHash fingerprints a tool's definition as it goes on the wire.
func toolHash(t *mcp.Tool) [32]byte {
	b, _ := json.Marshal(t)
	return sha256.Sum256(b)
}
