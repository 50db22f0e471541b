package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWriters: every write of concurrent writers lands whole,
// and String may be read meanwhile (go test -race checks the rest).
func TestConcurrentWriters(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("ab\n"))
				_, _ = b.WriteString("cd\n")
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); strings.Count(got, "ab\n") != 800 || strings.Count(got, "cd\n") != 800 || len(got) != 1600*3 {
		t.Fatalf("%d bytes written, want every line whole", len(got))
	}
}
