package integration

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: every runtime a
// test opens is closed by it, and closing must stop everything it started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
