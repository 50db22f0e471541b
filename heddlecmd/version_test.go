package heddlecmd

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVersionRevision builds the stock binary from this module, as an
// operator would in a clone, and checks that heddle version prints the
// revision it was built from and whether the tree was modified; built with
// -buildvcs=false, it says it cannot tell.
func TestVersionRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		need(t, "go", err)
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		need(t, "git", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gitBin, "-C", root, "rev-parse", "--is-inside-work-tree").CombinedOutput(); err != nil {
		need(t, "a git checkout", fmt.Errorf("%v: %s", err, out))
	}
	bin := filepath.Join(t.TempDir(), "heddle")
	build := func(t *testing.T, buildvcs string) {
		t.Helper()
		// -buildvcs on the command line overrides any in GOFLAGS; auto is
		// the go command's default.
		cmd := exec.Command(goBin, "build", "-buildvcs="+buildvcs, "-o", bin, "./cmd/heddle")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	version := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"version"}, args...)...).Output()
		if err != nil {
			t.Fatalf("heddle version: %v", err)
		}
		return string(out)
	}

	t.Run("stamped", func(t *testing.T) {
		build(t, "auto")
		text := version(t)
		m := regexp.MustCompile(`(?m)^revision: ([0-9a-f]{40}) \(git, committed [^)]+\), (clean|modified): `).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("heddle version printed no revision:\n%s", text)
		}
		if out, err := exec.Command(gitBin, "-C", root, "cat-file", "-e", m[1]+"^{commit}").CombinedOutput(); err != nil {
			t.Errorf("revision %s is not a commit of this checkout: %v %s", m[1], err, out)
		}
		if !strings.HasPrefix(text, "heddle v") {
			t.Errorf("the first line names no module version:\n%s", text)
		}
		var v struct {
			Revision string `json:"revision"`
			Modified *bool  `json:"modified"`
			Unknown  string `json:"unknown"`
		}
		if err := json.Unmarshal([]byte(version(t, "--format", "json")), &v); err != nil {
			t.Fatal(err)
		}
		if v.Revision != m[1] || v.Modified == nil || *v.Modified != (m[2] == "modified") || v.Unknown != "" {
			t.Errorf("JSON: revision %q, modified %v, unknown %q; want %s, %s, none", v.Revision, v.Modified, v.Unknown, m[1], m[2])
		}
	})
	t.Run("not stamped", func(t *testing.T) {
		build(t, "false")
		text := version(t)
		if !regexp.MustCompile(`(?m)^revision: unknown: .*-buildvcs=false`).MatchString(text) {
			t.Errorf("heddle version does not say why it cannot tell the revision:\n%s", text)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(version(t, "--format", "json")), &v); err != nil {
			t.Fatal(err)
		}
		if _, ok := v["revision"]; ok || v["unknown"] == nil {
			t.Errorf("JSON %v: want no revision, and why", v)
		}
	})
}
