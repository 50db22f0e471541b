package integration

import (
	"testing"

	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds and strategies, both halves

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: every runtime a
// test opens is closed by it, and closing must stop everything it started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
