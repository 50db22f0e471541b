package mcpfacade_test

import (
	"testing"

	"go.uber.org/goleak"

	_ "github.com/heddlehq/heddle/builtin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
