//go:build soak

package soak

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/proctest"
	"github.com/heddlehq/heddle/internal/testmcp"
)

// The soak's shape and settings.
const (
	callers = 64

	serverTimeout = 2 * time.Second // ai.mcp_servers.*.timeout_ms, sql_sources.*.timeout_ms
	toolTimeout   = 3 * time.Second // every agent's policies.tool_timeout_ms
	// margin is what a call may take past tool_timeout_ms: the front door,
	// the loopback and the scheduling of a two-core machine that runs
	// serve, seven servers and 64 callers at once.
	margin = time.Second

	defaultDuration = 3 * time.Minute
)

// Binaries built once by TestMain: heddle, and the test MCP server.
var heddleBin, testmcpBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "heddle-soak-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		heddleBin = filepath.Join(dir, "heddle")
		if out, err := exec.Command("go", "build", "-o", heddleBin, "github.com/heddlehq/heddle/cmd/heddle").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building heddle: %v\n%s", err, out)
			return 1
		}
		if testmcpBin, err = testmcp.Build(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// settings reads SOAK_DURATION (a Go duration; default three minutes)
// and the warm-up it implies: a sixth of it, from 5 to 30 s.
func settings(t *testing.T) (duration, warmup time.Duration) {
	duration = defaultDuration
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 20*time.Second {
			t.Fatalf("SOAK_DURATION=%q: want a Go duration of at least 20s, time for one cycle of chaos", v)
		}
		duration = d
	}
	warmup = min(30*time.Second, max(5*time.Second, duration/6))
	// The soak runs the warm-up and the duration, and needs a minute
	// around them to start, settle and stop.
	if dl, ok := t.Deadline(); ok && time.Until(dl) < warmup+duration+time.Minute {
		t.Fatalf("go test's -timeout leaves %v: the soak needs %v; raise it", time.Until(dl).Round(time.Second), warmup+duration+time.Minute)
	}
	return duration, warmup
}

// reportPath is where the report goes: SOAK_OUT, or soak-results.md at
// the module root.
func reportPath() string {
	if p := os.Getenv("SOAK_OUT"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "soak-results.md")
}

// config writes round's configuration: six MCP servers (two of each
// transport) and an SQLite source, each granted by an agent of its own.
// Every round changes agent s1's description (serve keeps every server
// across the reload); every second round changes server s2's environment
// (serve starts a new process of it and stops the old one once its calls
// are done).
func config(dir, db string, https map[string]*httpServer, round int) error {
	q := strconv.Quote
	to := strconv.Itoa(int(serverTimeout.Milliseconds()))
	api := "serve:\n  auth: {kind: none}\nai:\n  remote_clients: optional\n  mcp_servers:\n" +
		"    s1: {transport: stdio, command: " + q(testmcpBin) + ", args: [--name=s1], timeout_ms: " + to + "}\n" +
		"    s2: {transport: stdio, command: " + q(testmcpBin) + ", args: [--name=s2], timeout_ms: " + to + ", env: {ROUND: \"" + strconv.Itoa(round/2) + "\"}}\n"
	for _, name := range []string{"h1", "h2", "e1", "e2"} {
		s := https[name]
		api += "    " + name + ": {transport: " + s.transport + ", url: " + q(s.url()) + ", timeout_ms: " + to + "}\n"
	}
	api += "  sql_sources:\n    warehouse:\n      driver: sqlite\n      path: " + q(db) + "\n      timeout_ms: " + to + "\n" +
		"      statements:\n        open_incidents:\n" +
		"          sql: SELECT id, title, severity FROM incidents WHERE status = 'open' AND severity >= :min_severity\n" +
		"          params: {min_severity: {type: integer}}\n"
	policies := "policies: {tool_timeout_ms: " + strconv.Itoa(int(toolTimeout.Milliseconds())) + "}\n"
	files := map[string]string{
		"config/api.yaml":     api,
		"agents/q/agent.yaml": "capabilities: [{kind: sql, source: warehouse, statements: [open_incidents]}]\n" + policies,
	}
	for _, a := range mcpAgents {
		files["agents/"+a+"/agent.yaml"] = "capabilities: [{kind: mcp, server: " + a + "}]\n" + policies
	}
	files["agents/s1/agent.yaml"] = "description: round " + strconv.Itoa(round) + "\n" + files["agents/s1/agent.yaml"]
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		// Written aside and renamed, so that serve never reads half a file.
		if err := os.WriteFile(path+".new", []byte(body), 0o644); err != nil {
			return err
		}
		if err := os.Rename(path+".new", path); err != nil {
			return err
		}
	}
	return nil
}

// readiness is what the soak reads of /readyz.
type readiness struct {
	Ready           bool            `json:"ready"`
	Generation      uint64          `json:"generation"`
	LastReloadError json.RawMessage `json:"last_reload_error"`
}

func readyz(c *http.Client, base string) (readiness, error) {
	var r readiness
	res, err := c.Get(base + "/readyz")
	if err != nil {
		return r, err
	}
	defer res.Body.Close()
	err = json.NewDecoder(res.Body).Decode(&r)
	return r, err
}

// waitReady polls /readyz until it is ready, up to d.
func waitReady(c *http.Client, base string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		r, err := readyz(c, base)
		if err == nil && r.Ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/readyz not ready after %v (%+v, %v)", d, r, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startServe runs heddle serve in dir, in a process group of its own, its
// log in logPath; it returns the command and its base URL once it serves.
func startServe(t *testing.T, dir, logPath string) (*exec.Cmd, string, chan struct{}) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	cmd := exec.Command(heddleBin, "serve", "--listen", "127.0.0.1:0", "--log-level", "info", "--grace", "5s")
	cmd.Dir = dir
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	go func() {
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(done)
	}()
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "heddle: serving on ")
	if err != nil || !ok {
		t.Fatalf("serve printed %q (%v); its log is %s", line, err, logPath)
	}
	return cmd, base, done
}

// TestSoak: 64 callers call six MCP servers (two over stdio, two over
// Streamable HTTP, two over SSE, each in a process of its own) and an
// SQLite source through heddle serve for SOAK_DURATION, while chaos kills
// servers (SIGKILL; HTTP servers come back on their address), hangs them
// (SIGSTOP, SIGCONT past their timeout_ms) and reloads the configuration
// (SIGHUP after an edit). No call may take longer than its deadline and a
// margin, every failure must carry a code, serve's goroutines, open files
// and resident memory at the end must be within bounds of their value
// after the warm-up, and no process may outlive serve.
func TestSoak(t *testing.T) {
	duration, warmup := settings(t)
	begin := time.Now()
	dir := t.TempDir()
	out := reportPath()
	logPath := strings.TrimSuffix(out, ".md") + "-serve.log"

	db := filepath.Join(dir, "warehouse.db")
	wh, err := os.ReadFile(filepath.Join("..", "..", "examples", "warehouse.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, wh, 0o644); err != nil {
		t.Fatal(err)
	}

	serverLog, err := os.Create(filepath.Join(dir, "servers.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer serverLog.Close()
	https := map[string]*httpServer{}
	for _, s := range []*httpServer{{name: "h1", transport: "http"}, {name: "h2", transport: "http"}, {name: "e1", transport: "sse"}, {name: "e2", transport: "sse"}} {
		s.log = serverLog
		if err := s.start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.stop)
		https[s.name] = s
	}
	if err := config(dir, db, https, 0); err != nil {
		t.Fatal(err)
	}

	cmd, base, served := startServe(t, dir, logPath)
	servePID := cmd.Process.Pid
	ctl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	if err := waitReady(ctl, base, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	// Everything the soak starts listens on 127.0.0.1, and only there.
	for _, pid := range []int{servePID, https["h1"].pid(), https["h2"].pid(), https["e1"].pid(), https["e2"].pid()} {
		if l := listeners(pid); len(l) == 0 || !loopbackOnly(l) {
			t.Fatalf("process %d listens on %v, want 127.0.0.1 only", pid, l)
		}
	}
	limit := toolTimeout + margin
	tr := &http.Transport{MaxIdleConnsPerHost: callers}
	c := &http.Client{Transport: tr, Timeout: limit + 10*time.Second}

	smp := newSampler(servePID, base, begin)
	go smp.run()
	t.Cleanup(smp.halt)
	c6 := &chaos{servePID: servePID, https: https, begin: begin, stdio: map[int]time.Time{}}
	c6.noteStdio()

	// settle brings serve to rest and samples it: every HTTP server is
	// killed and started again, so that serve's pools of idle connections
	// to them (up to 64 a server, kept 90 s) start empty both times it is
	// sampled at rest — otherwise a pool that a hang filled would count
	// as growth — then serve reconnects, the callers' idle connections
	// are closed, and it is left alone for three seconds.
	settle := func(phase string) sample {
		for _, name := range []string{"h1", "h2", "e1", "e2"} {
			https[name].kill()
			if err := https[name].start(); err != nil {
				t.Fatal(err)
			}
		}
		if err := waitReady(ctl, base, 30*time.Second); err != nil {
			t.Errorf("%s: %v", phase, err)
		}
		for _, a := range mcpAgents {
			if got := do(ctl, base, request{method: http.MethodPost, path: "/v1/agents/" + a + "/tools/echo", body: `{"text": "settle"}`}); got.outcome != outcomeOK {
				t.Logf("%s: a call to %s after the restart: %v", phase, a, got)
			}
		}
		tr.CloseIdleConnections()
		ctl.Transport.(*http.Transport).CloseIdleConnections()
		smp.setPhase(phase)
		time.Sleep(3 * time.Second)
		s := smp.take()
		s.Phase = phase
		return s
	}

	// Warm-up: the load alone.
	smp.setPhase("warm-up")
	warm := newTally()
	load(c, base, callers, begin, time.Now().Add(warmup), limit, warm, 1)
	baseline := settle("baseline")
	t.Logf("warm-up: %d calls; at rest: %d goroutines, %d fds, %s", warm.calls, baseline.Goroutines, baseline.FDs, mib(baseline.RSS))

	// The soak: the load and chaos.
	smp.setPhase("soak")
	c6.reload = func(round int) (string, error) {
		before, err := readyz(ctl, base)
		if err != nil {
			return "", err
		}
		if err := config(dir, db, https, round); err != nil {
			return "", err
		}
		start := time.Now()
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			return "", err
		}
		for time.Since(start) < 15*time.Second {
			r, err := readyz(ctl, base)
			if err == nil && r.Generation > before.Generation {
				return fmt.Sprintf("round %d: generation %d after %v", round, r.Generation, time.Since(start).Round(time.Millisecond)), nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		r, _ := readyz(ctl, base)
		return "", fmt.Errorf("round %d: generation still %d 15s after SIGHUP; last_reload_error %s", round, r.Generation, r.LastReloadError)
	}
	soakStart := time.Now()
	end := soakStart.Add(duration)
	chaosDone := make(chan struct{})
	go func() { defer close(chaosDone); c6.run(end) }()
	run := newTally()
	load(c, base, callers, begin, end, limit, run, 2)
	soakTook := time.Since(soakStart)
	<-chaosDone
	c6.noteStdio()
	final := settle("final")
	smp.halt()

	// serve stops: nothing of it may be left.
	zombieCount := zombies(servePID)
	procs := append(proctest.Descendants(servePID), c6.stdioSeen()...)
	slices.Sort(procs)
	procs = slices.Compact(procs)
	stopStart := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-served:
	case <-time.After(30 * time.Second):
		t.Errorf("serve did not exit within 30s of SIGTERM")
		_ = syscall.Kill(-servePID, syscall.SIGKILL)
		<-served
	}
	exit := cmd.ProcessState.ExitCode()
	left := proctest.WaitGone(procs, 5*time.Second)
	var httpPIDs []int
	for _, s := range https {
		httpPIDs = append(httpPIDs, s.pid())
	}
	for _, pid := range runningBinary(testmcpBin) {
		if !slices.Contains(httpPIDs, pid) && !slices.Contains(left, pid) {
			left = append(left, pid)
		}
	}
	for _, s := range https {
		s.stop()
	}
	for _, pid := range runningBinary(testmcpBin) {
		if !slices.Contains(left, pid) {
			left = append(left, pid)
		}
	}
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	t.Logf("serve exited %d %v after SIGTERM", exit, time.Since(stopStart).Round(time.Millisecond))

	// The report.
	counts, failedEvents := c6.summary()
	bounds := sample{
		Phase:      "bound",
		Goroutines: baseline.Goroutines * 3 / 2,
		FDs:        baseline.FDs + 32,
		RSS:        2*baseline.RSS + 64<<20,
		Procs:      baseline.Procs,
	}
	r := &report{
		Date:     begin.UTC().Format("2006-01-02 15:04 UTC"),
		Machine:  fmt.Sprintf("%s/%s, %d cores, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version()),
		Duration: duration.String(),
		Warmup:   warmup.String(),
		Callers:  callers,
		Servers:  "2 stdio, 2 Streamable HTTP, 2 SSE (heddle-testmcp, each in a process of its own), 1 SQLite source",
		Settings: fmt.Sprintf("remote_clients: optional; timeout_ms %d; tool_timeout_ms %d", serverTimeout.Milliseconds(), toolTimeout.Milliseconds()),

		Calls:     run.calls,
		PerSecond: float64(run.calls) / soakTook.Seconds(),
		ByOutcome: run.byOutcome,
		ByKind:    run.byKind,
		ByAgent:   run.byAgent,
		P50:       ms(run.percentile(50)),
		P99:       ms(run.percentile(99)),
		Max:       ms(run.percentile(100)),
		WarmCalls: warm.calls,
		WarmBy:    warm.byOutcome,

		Limit:        limit.String(),
		Late:         run.lateN + warm.lateN,
		LateCalls:    append(warm.late, run.late...),
		Uncoded:      run.uncodedN + warm.uncodedN,
		UncodedCalls: append(warm.uncoded, run.uncoded...),

		Chaos:       counts,
		ChaosFailed: failedEvents,
		Events:      c6.events,

		Baseline: baseline,
		Peak:     peak(smp.all()),
		Final:    final,
		Bounds:   bounds,
		Series:   smp.all(),

		ServeExit: exit,
		Left:      left,
		Zombies:   zombieCount,
	}
	r.UncodedLogged, r.UncodedLog, r.Logged = readLog(logPath)
	// A call late by less than serve or the soak waited for a CPU, beyond
	// their usual wait, was late for the machine's other work.
	serveRate, soakRate := waitRate(r.Series, "warm-up")
	for i := range r.LateCalls {
		c := &r.LateCalls[i]
		c.Starved = starvation(r.Series, c.At, c.At+c.Took, serveRate, soakRate)
		if c.Starved >= c.Took-limit {
			r.LateStarved++
		}
	}
	r.WaitWarm = serveRate / 1e6
	soakServe, _ := waitRate(r.Series, "soak")
	r.WaitSoak = soakServe / 1e6
	r.LoadMean, r.LoadPeak = loadOf(r.Series, "soak")

	problem := func(format string, args ...any) {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
	if n := r.Late - r.LateStarved; n > 0 {
		problem("%d calls took longer than tool_timeout_ms and the margin (%v), more than the machine's load explains", n, limit)
	}
	if r.Uncoded > 0 {
		problem("%d calls failed without a code", r.Uncoded)
	}
	if r.UncodedLogged > 0 {
		problem("serve answered %d failures without a code of their own (TOOL_UNAVAILABLE in their place)", r.UncodedLogged)
	}
	if final.Goroutines < 0 || final.Goroutines > bounds.Goroutines {
		problem("goroutines at rest: %d at the end, %d after the warm-up (bound %d)", final.Goroutines, baseline.Goroutines, bounds.Goroutines)
	}
	if final.FDs > bounds.FDs {
		problem("open files at rest: %d at the end, %d after the warm-up (bound %d)", final.FDs, baseline.FDs, bounds.FDs)
	}
	if final.RSS > bounds.RSS {
		problem("RSS at rest: %s at the end, %s after the warm-up (bound %s)", mib(final.RSS), mib(baseline.RSS), mib(bounds.RSS))
	}
	if final.Procs != baseline.Procs {
		problem("serve runs %d processes at rest at the end, %d after the warm-up", final.Procs, baseline.Procs)
	}
	if zombieCount > 0 {
		problem("%d of serve's children were not reaped", zombieCount)
	}
	if len(left) > 0 {
		problem("processes %v outlived serve", left)
	}
	if exit != 0 {
		problem("serve exited %d after SIGTERM, want 0", exit)
	}
	if len(failedEvents) > 0 {
		problem("%d chaos steps did not go as planned (see Chaos)", len(failedEvents))
	}
	for _, a := range append(slices.Clone(mcpAgents), "q") {
		if run.byAgent[a][outcomeOK] == 0 {
			problem("agent %s: no call succeeded", a)
		}
	}
	if counts["reload"] == 0 || counts["kill"] == 0 || counts["hang"] == 0 {
		problem("chaos did not run each of its steps: %v", counts)
	}

	md := r.markdown()
	fmt.Println(md)
	if err := r.write(out); err != nil {
		t.Error(err)
	}
	abs, _ := filepath.Abs(out)
	t.Logf("report: %s (and .json); serve's log: %s", abs, logPath)
	for _, pr := range r.Problems {
		t.Error(pr)
	}
}

// readLog reads serve's log: how many failures it answered without a
// code of their own (the front door answers TOOL_UNAVAILABLE in their
// place and logs "a call or listing failed" with the reason), the first
// few of those lines, and how often each warning and error was logged.
func readLog(path string) (int, []string, map[string]int) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, nil
	}
	defer f.Close()
	n := 0
	var first []string
	msgs := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "a call or listing failed") {
			n++
			if len(first) < keep {
				first = append(first, line)
			}
		}
		for _, level := range []string{"level=WARN", "level=ERROR"} {
			if _, rest, ok := strings.Cut(line, level+" msg="); ok {
				msgs[level[len("level="):]+" "+logMsg(rest)]++
			}
		}
	}
	return n, first, msgs
}

// logMsg is the message at the start of rest, a text handler's msg value.
func logMsg(rest string) string {
	if m, err := strconv.QuotedPrefix(rest); err == nil {
		s, _ := strconv.Unquote(m)
		return s
	}
	m, _, _ := strings.Cut(rest, " ")
	return m
}

// loadOf is the mean and the peak of the machine's load average over the
// samples of a phase.
func loadOf(samples []sample, phase string) (mean, peak float64) {
	n := 0
	for _, s := range samples {
		if s.Phase == phase && s.Load >= 0 {
			mean += s.Load
			peak = max(peak, s.Load)
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return mean / float64(n), peak
}
