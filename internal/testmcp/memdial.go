package testmcp

import (
	"context"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DialInMemory returns a Dial of the mcp kind (mcplive.Kind.Dial) that
// connects every attempt to a new in-process test server with opts, over an
// in-memory transport: what a test in a synctest bubble, or one that
// measures heddle without a process, needs. The servers' sessions are closed when the test ends.
func DialInMemory(t testing.TB, opts *Options) func(string) mcp.Transport {
	var (
		mu       sync.Mutex
		sessions []*mcp.ServerSession
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, ss := range sessions {
			_ = ss.Close()
		}
	})
	return func(string) mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := NewServer(opts).Connect(context.Background(), st, nil)
		if err != nil {
			t.Errorf("in-memory server: %v", err)
			return ct
		}
		mu.Lock()
		sessions = append(sessions, ss)
		mu.Unlock()
		return ct
	}
}
