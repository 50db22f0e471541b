package heddlecmd

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	build := func(t *testing.T, buildvcs string, flags ...string) {
		t.Helper()
		// -buildvcs on the command line overrides any in GOFLAGS; auto is
		// the go command's default.
		cmd := exec.Command(goBin, append(append([]string{"build", "-buildvcs=" + buildvcs}, flags...), "-o", bin, "./cmd/heddle")...)
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
	t.Run("stamped by the release build", func(t *testing.T) {
		// As make release builds (internal/release/release.sh), less
		// -trimpath, which would compile everything afresh: no VCS state,
		// the version and the revision given with -ldflags.
		const rev, at = "0123456789abcdef0123456789abcdef01234567", "2026-11-30T12:00:00Z"
		x := func(name, value string) string { return "-X " + modulePath + "/heddlecmd." + name + "=" + value }
		build(t, "false", "-ldflags="+strings.Join([]string{
			x("Version", "v1.2.3"), x("Revision", rev), x("RevisionTime", at), x("RevisionModified", "false")}, " "))
		text := version(t)
		if !strings.HasPrefix(text, "heddle v1.2.3 (") {
			t.Errorf("the first line names no stamped version:\n%s", text)
		}
		if want := "\nrevision: " + rev + " (git, committed " + at + "), clean: "; !strings.Contains(text, want) {
			t.Errorf("heddle version does not print the stamped revision %q:\n%s", want, text)
		}
		var v versionInfo
		if err := json.Unmarshal([]byte(version(t, "--format", "json")), &v); err != nil {
			t.Fatal(err)
		}
		if v.Version != "v1.2.3" || v.Revision != rev || v.Time != at || v.Modified == nil || *v.Modified || v.Unknown != "" {
			t.Errorf("JSON %+v: want version v1.2.3, revision %s at %s, not modified, nothing unknown", v, rev, at)
		}
	})
}

// TestVersionStamped: the revision stamped with -ldflags stands in for the
// VCS state the go command did not record (it never does under go test),
// and a modified state other than true or false is left unknown.
func TestVersionStamped(t *testing.T) {
	defer func(r, at, m string) { Revision, RevisionTime, RevisionModified = r, at, m }(Revision, RevisionTime, RevisionModified)
	modified := func(b bool) *bool { return &b }
	for _, tc := range []struct {
		name, rev, at, modified string
		want                    versionInfo
	}{
		{name: "none", want: versionInfo{Unknown: noVCS}},
		{name: "clean", rev: "abc", at: "2026-11-30T12:00:00Z", modified: "false",
			want: versionInfo{VCS: "git", Revision: "abc", Time: "2026-11-30T12:00:00Z", Modified: modified(false)}},
		{name: "modified", rev: "abc", modified: "true", want: versionInfo{VCS: "git", Revision: "abc", Modified: modified(true)}},
		{name: "modified unknown", rev: "abc", modified: "yes", want: versionInfo{VCS: "git", Revision: "abc"}},
		{name: "no revision", at: "2026-11-30T12:00:00Z", modified: "false", want: versionInfo{Unknown: noVCS}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			Revision, RevisionTime, RevisionModified = tc.rev, tc.at, tc.modified
			v := readVersion()
			got := versionInfo{VCS: v.VCS, Revision: v.Revision, Time: v.Time, Modified: v.Modified, Unknown: v.Unknown}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("readVersion (-want +got):\n%s", diff)
			}
		})
	}
}
