package testmcp

import (
	"fmt"
	"os/exec"
	"path/filepath"
)

// Build builds the test server binary, cmd/heddle-testmcp, into dir and
// returns its path: what a test that runs it as a child process, over
// stdio or HTTP, starts. The error holds the compiler's output.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "heddle-testmcp")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/heddlehq/heddle/cmd/heddle-testmcp").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the test server: %v\n%s", err, out)
	}
	return bin, nil
}
