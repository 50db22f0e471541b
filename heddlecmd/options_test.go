package heddlecmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/heddlehq/heddle/diag"
)

// TestOptionsExample: the example configuration is read only when the
// command has one, no --config is given and ./config/api.yaml is absent.
func TestOptionsExample(t *testing.T) {
	example := fstest.MapFS{
		"config/api.yaml":        {Data: []byte("ai:\n  startup_timeout_ms: 5000\n")},
		"agents/a/agent.yaml":    {Data: []byte("capabilities: []\n")},
		"agents/b/agent.yaml":    {Data: []byte("capabilities: []\n")},
		"elsewhere/c/agent.yaml": {Data: []byte("capabilities: []\n")},
	}
	dir := t.TempDir()
	t.Chdir(dir)
	run := func(t *testing.T, opts Options, args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := Run(args, &stdout, &stderr, opts)
		return code, stdout.String(), stderr.String()
	}

	t.Run("none", func(t *testing.T) {
		code, stdout, stderr := run(t, Options{}, "check")
		if code != ExitFail || stdout != "" || !strings.Contains(stderr, string(diag.ConfigParse)) {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 with %s", code, stdout, stderr, diag.ConfigParse)
		}
	})
	t.Run("fallback", func(t *testing.T) {
		code, stdout, stderr := run(t, Options{Example: example}, "check")
		if code != ExitOK || !strings.HasPrefix(stdout, "ok: 2 agents") {
			t.Errorf("exit %d, stdout %q, stderr %q; want the example's 2 agents", code, stdout, stderr)
		}
		// The fallback is said, once, on stderr.
		if n := strings.Count(stderr, "example configuration built into this binary"); n != 1 {
			t.Errorf("stderr %q announces the embedded example %d times, want once", stderr, n)
		}
	})
	t.Run("agents flag", func(t *testing.T) {
		code, stdout, stderr := run(t, Options{Example: example}, "check", "--agents", "elsewhere")
		if code != ExitOK || !strings.HasPrefix(stdout, "ok: 1 agent") {
			t.Errorf("exit %d, stdout %q, stderr %q; want the example's 1 agent under elsewhere", code, stdout, stderr)
		}
	})
	t.Run("config flag", func(t *testing.T) {
		code, _, stderr := run(t, Options{Example: example}, "check", "--config", "config/api.yaml")
		if code != ExitFail || !strings.Contains(stderr, string(diag.ConfigParse)) {
			t.Errorf("exit %d, stderr %q; want exit 1 with %s: --config is never replaced", code, stderr, diag.ConfigParse)
		}
	})
	t.Run("local config", func(t *testing.T) {
		if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config/api.yaml"), []byte("ai: {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "agents/local"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "agents/local/agent.yaml"), []byte("capabilities: []\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := run(t, Options{Example: example}, "check")
		if code != ExitOK || !strings.HasPrefix(stdout, "ok: 1 agent") {
			t.Errorf("exit %d, stdout %q, stderr %q; want the local configuration's 1 agent", code, stdout, stderr)
		}
		if strings.Contains(stderr, "built into this binary") {
			t.Errorf("stderr %q announces the embedded example, which was not read", stderr)
		}
	})
}
