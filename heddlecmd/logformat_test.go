package heddlecmd

import (
	"bytes"
	"strings"
	"testing"
)

// TestLogFormatUnknown: an unknown --log-format is a usage error, on every
// command that logs, naming the valid values and the closest of them.
func TestLogFormatUnknown(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"config/api.yaml":     "ai: {}\n",
		"agents/a/agent.yaml": "capabilities: []\n",
	})
	t.Chdir(dir)
	for _, args := range [][]string{
		{"tools", "a", "--log-format", "jsn"},
		{"call", "a", "t", "--log-format", "jsn"},
		{"health", "--log-format", "jsn"},
		{"serve", "--log-format", "jsn"},
		{"lock", "--log-format", "jsn"},
		{"health", "--log-format", "logfmt"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Run(args, &stdout, &stderr, Options{}); code != ExitUsage {
				t.Errorf("exit %d, want %d\n%s", code, ExitUsage, &stderr)
			}
			msg := stderr.String()
			if !strings.Contains(msg, `unknown --log-format "`+args[len(args)-1]+`"`) || !strings.Contains(msg, "valid values: text, json") {
				t.Errorf("stderr = %q", msg)
			}
			if args[len(args)-1] == "jsn" && !strings.Contains(msg, "did you mean json?") {
				t.Errorf("stderr = %q, want the closest value", msg)
			}
		})
	}
}
