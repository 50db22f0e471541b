package heddlecmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// need skips the test for want of what (a program on the PATH, a git
// checkout), or fails it under CI=true, where everything must be there.
func need(t *testing.T, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v (required when CI=true)", what, err)
	}
	t.Skipf("%s: %v", what, err)
}

// TestBashCompletion sources the script heddle completion bash prints and
// runs its completion function under bash, as the shell would on a tab,
// for the words of several command lines; it checks the candidates.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		need(t, "bash", err)
	}
	// heddle on the PATH is this test binary (TestMain); the scripts call it.
	heddle, err := exec.LookPath("heddle")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"config/api.yaml":          "ai:\n  mcp_servers:\n    srv:\n      transport: stdio\n      command: " + testmcpBin + "\n",
		"config/api.staging.yaml":  "ai: {}\n",
		"agents/alpha/agent.yaml":  "capabilities:\n  - {kind: mcp, server: srv}\n",
		"agents/beta/agent.yaml":   "capabilities: []\n",
		"other/gamma/agent.yaml":   "capabilities: []\n",
		"agents/not-an-agent/NOTE": "no agent.yaml here\n",
	}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(heddle, "completion", "bash")
	cmd.Dir = dir
	script, err := cmd.Output()
	if err != nil {
		t.Fatalf("heddle completion bash: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "heddle.bash"), script, 0o644); err != nil {
		t.Fatal(err)
	}

	// Each case is COMP_WORDS as bash splits the line (at "=" too), the
	// cursor in the last word.
	tests := []struct {
		name  string
		words []string
		want  []string // exactly these, in this order
		has   []string // at least these
	}{
		{name: "commands", words: []string{""},
			want: []string{"check", "plan", "tools", "call", "health", "serve", "mcp", "lock", "import", "audit", "version", "help", "completion"}},
		{name: "command prefix", words: []string{"c"}, want: []string{"check", "call", "completion"}},
		{name: "agents", words: []string{"tools", ""}, want: []string{"alpha", "beta"}},
		{name: "agents of --agents", words: []string{"call", "--agents", "other", ""}, want: []string{"gamma"}},
		{name: "agents of --agents=", words: []string{"--agents", "=", "other", "tools", "g"}, want: []string{"gamma"}},
		{name: "tools of an agent", words: []string{"call", "alpha", ""}, has: []string{"echo", "add"}},
		{name: "tool prefix", words: []string{"call", "alpha", "ec"}, want: []string{"echo"}},
		{name: "no tools of an unknown agent", words: []string{"call", "nobody", ""}, want: nil},
		{name: "flags", words: []string{"tools", "alpha", "--lo"}, want: []string{"--lock", "--log-format", "--log-level"}},
		{name: "flags of call", words: []string{"call", "alpha", "echo", "--y"}, want: []string{"--yes"}},
		{name: "flag values", words: []string{"tools", "--log-level", ""}, want: []string{"debug", "info", "warn", "error"}},
		{name: "log format values", words: []string{"serve", "--log-format", ""}, want: []string{"text", "json"}},
		{name: "flag values after =", words: []string{"check", "--format", "=", ""}, want: []string{"text", "json"}},
		{name: "flag value prefix after =", words: []string{"check", "--format", "=", "j"}, want: []string{"json"}},
		{name: "environments", words: []string{"--env", ""}, want: []string{"staging"}},
		{name: "shells", words: []string{"completion", ""}, want: []string{"bash", "zsh", "fish"}},
		{name: "help topics", words: []string{"help", "v"}, want: []string{"version"}},
		{name: "files to import", words: []string{"import", ""}, has: []string{"agents", "config", "heddle.bash"}},
		{name: "directories", words: []string{"--agents", ""}, has: []string{"agents", "config", "other"}},
		{name: "nothing after an unknown command", words: []string{"frobnicate", ""}, want: nil},
	}
	const run = `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _heddle; printf '%s\n' "${COMPREPLY[@]}"`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bash, append([]string{"--norc", "--noprofile", "-c", run, "bash", "heddle.bash", "heddle"}, tt.words...)...)
			cmd.Dir = dir
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("bash: %v", err)
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if l != "" {
					got = append(got, l)
				}
			}
			if tt.has != nil {
				for _, h := range tt.has {
					if !slices.Contains(got, h) {
						t.Errorf("heddle %s<TAB>: %q, want it to hold %q", strings.Join(tt.words, " "), got, h)
					}
				}
				return
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("heddle %s<TAB>: %q, want %q", strings.Join(tt.words, " "), got, tt.want)
			}
		})
	}
}
