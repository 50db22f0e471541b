package main

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// demoScript is what `make demo` runs once bin/ is built.
const demoScript = "examples/demo.sh"

// TestDemo runs the quick start's first command as `make demo` does (bin/
// built as `make build` builds it) in a copy of the repository: it must
// exit 0, make one call of each kind of grant, print for every command of
// the README's excerpt what the README shows, leave nothing listening on
// the example agent's port, and leave the copy's `git status` clean.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the commands and runs the demo; skipped with -short")
	}
	for _, tool := range []string{"go", "git", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			needed(t, "%s is not on PATH: %v", tool, err)
		}
	}
	const agentAddr = "127.0.0.1:8091"
	if l, err := net.Listen("tcp", agentAddr); err != nil {
		needed(t, "the demo needs %s, which is taken: %v", agentAddr, err)
	} else {
		l.Close()
	}
	s := newSandbox(t)
	bin := t.TempDir()
	s.build(bin)
	s.linkBin(bin)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", demoScript)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = s.dir, s.env, &stdout, &stderr
	err := cmd.Run()
	killGroup(cmd)
	if err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", demoScript, err, stdout.String(), stderr.String())
	}
	// Standard error holds the agent's line, and nothing else: no warning,
	// no failure.
	if got := strings.TrimSpace(stderr.String()); got != "heddle-example-agent: listening on http://"+agentAddr {
		t.Errorf("standard error:\n%s", got)
	}

	printed := demoOutputs(stdout.String())
	for _, kind := range []string{"mcp", "sql", "usecase", "a2a"} {
		if !demoCalls(t, printed, kind) {
			t.Errorf("the demo makes no call of a tool of kind %s", kind)
		}
	}
	steps, err := parseDoc("README.md", readDoc(t, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	shown := 0
	for _, st := range steps {
		if st.kind != "console" || st.background || st.sandbox != "" || st.notRun != "" {
			continue
		}
		for _, c := range st.commands {
			got, ok := printed[c.command]
			if !ok {
				t.Errorf("README.md:%d: the demo does not run %s", c.line, c.command)
				continue
			}
			shown++
			if m := matchOutput(c.output, got); m != nil {
				t.Error(describeMismatch("README.md", c, got, m))
			}
		}
	}
	if shown == 0 {
		t.Error("README.md shows no command of the demo")
	}

	if c, err := net.DialTimeout("tcp", agentAddr, time.Second); err == nil {
		c.Close()
		t.Errorf("something still listens on %s after the demo", agentAddr)
	}
	s.assertClean(demoScript)
}

// demoOutputs splits the demo's standard output at its "$ command" lines:
// each command's lines are those up to the next one.
func demoOutputs(out string) map[string][]string {
	outputs := map[string][]string{}
	command := ""
	for _, line := range outputLines(out) {
		if c, ok := strings.CutPrefix(line, "$ "); ok {
			command = c
			outputs[command] = []string{}
			continue
		}
		if command != "" {
			outputs[command] = append(outputs[command], line)
		}
	}
	return outputs
}

// demoCalls reports whether the demo calls a tool that its
// `tools incident-triage` or `tools catalog-assistant` lists as of kind.
func demoCalls(t *testing.T, printed map[string][]string, kind string) bool {
	t.Helper()
	for _, agent := range []string{"incident-triage", "catalog-assistant"} {
		for _, row := range printed["bin/incidents-worker tools "+agent] {
			f := strings.Fields(row)
			if len(f) < 2 || f[1] != kind {
				continue
			}
			for command := range printed {
				if strings.HasPrefix(command, "bin/incidents-worker call "+agent+" "+f[0]+" ") {
					return true
				}
			}
		}
	}
	return false
}
