package heddlecmd

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/proctest"
	"github.com/heddlehq/heddle/runtime"
)

// waitReport polls /readyz until ok holds of its body, for at most d.
func waitReport(t *testing.T, base string, d time.Duration, ok func(runtime.Report) bool) runtime.Report {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		rep := readyz(t, http.DefaultClient, base)
		if ok(rep) {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz did not turn as expected within %v: %+v", d, rep)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func generation(n uint64) func(runtime.Report) bool {
	return func(r runtime.Report) bool { return r.Generation == n }
}

// TestServeReloadSIGHUP: a heddle serve process without --watch does not
// reload when a file changes; on SIGHUP it does — the new server and agent
// serve, the unchanged server keeps its process — and on SIGHUP with a
// broken file it keeps serving the live generation and says why in
// /readyz and /metrics. On SIGTERM it exits 0 and leaves no process.
func TestServeReloadSIGHUP(t *testing.T) {
	dir := t.TempDir()
	q := strconv.Quote(testmcpBin)
	api := "serve:\n  auth: {kind: none}\nai:\n  mcp_servers:\n    srv: {transport: stdio, command: " + q + "}\n"
	writeFiles(t, dir, map[string]string{
		"config/api.yaml":     api,
		"agents/a/agent.yaml": "capabilities: [{kind: mcp, server: srv}]\n",
	})
	w := startWorkerIn(t, dir)
	c := http.DefaultClient
	rep := readyz(t, c, w.base)
	if rep.Generation != 1 || len(rep.PlanHash) != 64 || rep.LastReloadError != nil {
		t.Fatalf("/readyz at start-up: %+v", rep)
	}
	firstHash := rep.PlanHash
	pid := pidOf(t, c, w.base, "a")

	writeFiles(t, dir, map[string]string{
		"config/api.yaml":     api + "    two: {transport: stdio, command: " + q + "}\n",
		"agents/b/agent.yaml": "capabilities: [{kind: mcp, server: two}]\n",
	})
	time.Sleep(3 * WatchDebounce)
	if rep := readyz(t, c, w.base); rep.Generation != 1 {
		t.Fatalf("without --watch, a change of a file reloaded: generation %d", rep.Generation)
	}
	w.signal(syscall.SIGHUP)
	rep = waitReport(t, w.base, 10*time.Second, generation(2))
	if rep.PlanHash == firstHash || len(rep.Dependencies) != 2 {
		t.Errorf("after SIGHUP: %+v", rep)
	}
	if got := pidOf(t, c, w.base, "a"); got != pid {
		t.Errorf("server srv runs as pid %d after the reload, was %d", got, pid)
	}
	two := pidOf(t, c, w.base, "b")

	writeFiles(t, dir, map[string]string{"agents/b/agent.yaml": "capabilities: [{kind: mcp, server: nowhere}]\n"})
	w.signal(syscall.SIGHUP)
	rep = waitReport(t, w.base, 10*time.Second, func(r runtime.Report) bool { return r.LastReloadError != nil })
	if rep.Generation != 2 || !rep.Ready || !slices.Contains(rep.LastReloadError.Codes, diag.MCPServerUnknown) {
		t.Errorf("after SIGHUP with a broken agent: %+v (last_reload_error %+v)", rep, rep.LastReloadError)
	}
	if got := pidOf(t, c, w.base, "b"); got != two {
		t.Errorf("the live generation's server two runs as pid %d, was %d", got, two)
	}
	m := get(t, c, w.base+"/metrics")
	for _, want := range []string{"heddle_config_generation 2\n", `heddle_config_reloads_total{result="failure"} 1` + "\n", `heddle_config_reloads_total{result="success"} 1` + "\n"} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	procs := proctest.Descendants(w.cmd.Process.Pid)
	w.signal(syscall.SIGTERM)
	if code := w.waitExit(20 * time.Second); code != 0 {
		t.Errorf("serve exited %d after SIGTERM, want 0", code)
	}
	if left := proctest.WaitGone(procs, 5*time.Second); len(left) > 0 {
		t.Errorf("processes %v are left after serve exited", left)
	}
}

// configMap writes files into dir as kubelet updates a ConfigMap volume:
// each version in a directory of its own, a ..data link to the current one
// swapped by rename, and each file a link through ..data.
type configMap struct {
	t   *testing.T
	dir string
	n   int
}

func (cm *configMap) write(files map[string]string) {
	cm.t.Helper()
	cm.n++
	version := "..2026_12_01_00_00_0" + strconv.Itoa(cm.n)
	for name, data := range files {
		if err := os.MkdirAll(filepath.Join(cm.dir, version), 0o755); err != nil {
			cm.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cm.dir, version, name), []byte(data), 0o644); err != nil {
			cm.t.Fatal(err)
		}
		link := filepath.Join(cm.dir, name)
		if _, err := os.Lstat(link); err != nil {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				cm.t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(cm.dir, "..data_tmp")
	if err := os.Symlink(version, tmp); err != nil {
		cm.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(cm.dir, "..data")); err != nil {
		cm.t.Fatal(err)
	}
	if cm.n > 1 {
		if err := os.RemoveAll(filepath.Join(cm.dir, "..2026_12_01_00_00_0"+strconv.Itoa(cm.n-1))); err != nil {
			cm.t.Fatal(err)
		}
	}
}

// TestServeWatchConfigMap: serve --watch reloads when its configuration is
// a ConfigMap volume that kubelet updates (the ..data link swapped, no
// file written in place): a server added serves, the one unchanged keeps
// its process; a server changed gets a new process, and the old one's
// process ends once its generation drained.
func TestServeWatchConfigMap(t *testing.T) {
	dir := t.TempDir()
	q := strconv.Quote(testmcpBin)
	cm := &configMap{t: t, dir: filepath.Join(dir, "config")}
	api := "serve:\n  auth: {kind: none}\nai:\n  mcp_servers:\n    srv: {transport: stdio, command: " + q + "}\n"
	cm.write(map[string]string{"api.yaml": api})
	writeFiles(t, dir, map[string]string{"agents/a/agent.yaml": "capabilities: [{kind: mcp, server: srv}]\n"})
	w := startWorkerIn(t, dir, "--watch")
	c := http.DefaultClient
	pid := pidOf(t, c, w.base, "a")

	cm.write(map[string]string{"api.yaml": api + "    two: {transport: stdio, command: " + q + "}\n"})
	writeFiles(t, dir, map[string]string{"agents/b/agent.yaml": "capabilities: [{kind: mcp, server: two}]\n"})
	waitReport(t, w.base, 10*time.Second, func(r runtime.Report) bool { return r.Generation >= 2 && len(r.Dependencies) == 2 })
	if got := pidOf(t, c, w.base, "a"); got != pid {
		t.Errorf("server srv runs as pid %d after the reload, was %d", got, pid)
	}
	if got := pidOf(t, c, w.base, "b"); got == 0 {
		t.Errorf("agent b's server has no pid")
	}

	gen := readyz(t, c, w.base).Generation
	cm.write(map[string]string{"api.yaml": "serve:\n  auth: {kind: none}\nai:\n  mcp_servers:\n" +
		"    srv: {transport: stdio, command: " + q + ", env: {CHANGED: \"1\"}}\n    two: {transport: stdio, command: " + q + "}\n"})
	waitReport(t, w.base, 10*time.Second, generation(gen+1))
	if got := pidOf(t, c, w.base, "a"); got == pid {
		t.Errorf("server srv changed, but runs as the same process %d", pid)
	}
	if left := proctest.WaitGone([]int{pid}, 5*time.Second); len(left) > 0 {
		t.Errorf("the changed server's old process %d is still running after its generation drained", pid)
	}
}
