package heddlecmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heddlehq/heddle/builtin"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/proctest"
	"github.com/heddlehq/heddle/internal/syncbuf"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/serve"
)

// reloadRound is the configuration of one round of TestReloadUnderLoad:
//
//   - server keep, granted by agent stay, never changes (its process must
//     live through every reload); agent stay's description changes every
//     round;
//   - server rot, granted by agent rot, changes its environment every
//     second round (a new process each time);
//   - server extra and agent extra, which grants it, are there in rounds
//     0, 1, 4, 5, … and removed in the others;
//   - broken rounds write an agent file that does not parse.
func reloadRound(i int, broken bool) map[string]string {
	q := strconv.Quote(testmcpBin)
	api := "serve:\n  auth: {kind: none}\n  limits: {max_in_flight: 4096}\nai:\n  mcp_servers:\n" +
		"    keep: {transport: stdio, command: " + q + "}\n" +
		"    rot: {transport: stdio, command: " + q + ", env: {ROUND: \"" + strconv.Itoa(i/2) + "\"}}\n"
	files := map[string]string{
		"agents/stay/agent.yaml": "description: round " + strconv.Itoa(i) + "\ncapabilities: [{kind: mcp, server: keep}]\n",
		"agents/rot/agent.yaml":  "capabilities: [{kind: mcp, server: rot}]\n",
	}
	if (i/2)%2 == 0 {
		api += "    extra: {transport: stdio, command: " + q + "}\n"
		files["agents/extra/agent.yaml"] = "capabilities: [{kind: mcp, server: extra}]\n"
	}
	if broken {
		files["agents/stay/agent.yaml"] = "capabilities: [\n"
	}
	files["config/api.yaml"] = api
	return files
}

// writeRound writes a round's files and removes the agents it has not.
func writeRound(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if _, ok := files["agents/extra/agent.yaml"]; !ok {
		if err := os.RemoveAll(filepath.Join(dir, "agents/extra")); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, dir, files)
}

// outcome is what one call through the invoke API came to: "ok", or a
// code ("tool_error" for a tool's own failure, "transport" when there was
// no answer).
func outcome(c *http.Client, base, agent, tool, body string) (string, map[string]any) {
	res, err := c.Post(base+"/v1/agents/"+agent+"/tools/"+tool, "application/json", strings.NewReader(body))
	if err != nil {
		return "transport: " + err.Error(), nil
	}
	defer res.Body.Close()
	var v struct {
		Error             struct{ Code string } `json:"error"`
		IsError           bool                  `json:"isError"`
		Meta              map[string]any        `json:"_meta"`
		StructuredContent map[string]any        `json:"structuredContent"`
	}
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		return "undecodable answer", nil
	}
	switch {
	case res.StatusCode != http.StatusOK:
		return v.Error.Code, nil
	case v.IsError && v.Meta["code"] != nil:
		return fmt.Sprint(v.Meta["code"]), nil
	case v.IsError:
		return "tool_error", nil
	}
	return "ok", v.StructuredContent
}

// pidOf calls agent's pid tool and returns the server's process id.
func pidOf(t *testing.T, c *http.Client, base, agent string) int {
	t.Helper()
	got, sc := outcome(c, base, agent, "pid", "{}")
	if got != "ok" {
		t.Fatalf("pid of %s's server: %s", agent, got)
	}
	pid, _ := sc["pid"].(float64)
	return int(pid)
}

// readyz returns /readyz's body.
func readyz(t *testing.T, c *http.Client, base string) runtime.Report {
	t.Helper()
	res, err := c.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var rep runtime.Report
	if err := json.NewDecoder(res.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestReloadUnderLoad: 200 callers call through heddle serve's front door
// for the length of 20 reloads that add, change and remove servers and
// agents, two of them of a configuration that does not parse. No call
// fails but those to the agent a reload removed (AGENT_UNKNOWN); the
// server no reload changed keeps its process; a broken configuration
// leaves the live generation serving and shows its codes in /readyz, the
// log and the failure counter; and once closed, no goroutine and no
// server process is left.
func TestReloadUnderLoad(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const (
		callers = 200
		reloads = 20
	)
	broken := map[int]bool{7: true, 14: true}
	dir := t.TempDir()
	writeRound(t, dir, reloadRound(0, false))
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	kinds := builtin.Default()
	e := &invocation{stdout: &logs, stderr: &logs, environ: os.Environ(), g: defaultGlobals(), kinds: kinds.Grants(), set: kinds}
	e.g.config, e.g.agents, e.g.configSet, e.g.agentsSet = filepath.Join(dir, "config/api.yaml"), filepath.Join(dir, "agents"), true, true
	rf := &runFlags{}
	m := metrics.New()
	e.onCall = m.Observe
	ctx := context.Background()

	rt, code := e.open(ctx, rf, log, false)
	if rt == nil {
		t.Fatalf("open: exit %d: %s", code, logs.String())
	}
	gens := runtime.NewGenerations(rt)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front, err := serve.New(ctx, rt, &serve.Options{Addr: ln.Addr(), Metrics: m, Logger: log, Generations: gens})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- front.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	tr := &http.Transport{MaxIdleConnsPerHost: callers}
	c := &http.Client{Transport: tr, Timeout: time.Minute}
	r := newReloader(e, rf, log, gens, m)

	keepPID := pidOf(t, c, base, "stay")
	pids := []int{keepPID, pidOf(t, c, base, "rot"), pidOf(t, c, base, "extra")}

	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		mu       sync.Mutex
		outcomes = map[string]map[string]int{} // agent → outcome → calls
	)
	agents := []string{"stay", "rot", "extra"}
	for n := range callers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(n), 1))
			for k := 0; !stop.Load(); k++ {
				agent := agents[(n+k)%len(agents)]
				var got string
				if rng.IntN(2) == 0 {
					got, _ = outcome(c, base, agent, "sleep", `{"ms": `+strconv.Itoa(rng.IntN(30))+`}`)
				} else {
					got, _ = outcome(c, base, agent, "echo", `{"text": "hello"}`)
				}
				mu.Lock()
				if outcomes[agent] == nil {
					outcomes[agent] = map[string]int{}
				}
				outcomes[agent][got]++
				mu.Unlock()
			}
		})
	}

	start := time.Now()
	var failures, successes int
	for i := 1; i <= reloads; i++ {
		time.Sleep(100 * time.Millisecond) // calls run on the generation before
		before := gens.Generation()
		writeRound(t, dir, reloadRound(i, broken[i]))
		err := r.Reload(ctx)
		rep := readyz(t, c, base)
		if broken[i] {
			failures++
			if err == nil || gens.Generation() != before {
				t.Fatalf("reload %d of a broken file: err %v, generation %d → %d", i, err, before, gens.Generation())
			}
			if rep.LastReloadError == nil || !slices.Equal(rep.LastReloadError.Codes, []diag.Code{diag.ConfigParse}) {
				t.Fatalf("reload %d of a broken file: /readyz last_reload_error = %+v, want codes [CONFIG_PARSE]", i, rep.LastReloadError)
			}
		} else {
			successes++
			if err != nil {
				t.Fatalf("reload %d: %v", i, err)
			}
			if rep.LastReloadError != nil {
				t.Errorf("reload %d succeeded, but /readyz still shows %+v", i, rep.LastReloadError)
			}
			if (i/2)%2 == 0 {
				pids = append(pids, pidOf(t, c, base, "extra"))
			}
			pids = append(pids, pidOf(t, c, base, "rot"))
		}
		if rep.Generation != gens.Generation() || rep.PlanHash != gens.Current().PlanHash() || !rep.Ready {
			t.Fatalf("reload %d: /readyz says generation %d, plan %s, ready %v; live: generation %d, plan %s", i, rep.Generation, rep.PlanHash, rep.Ready, gens.Generation(), gens.Current().PlanHash())
		}
		if got := pidOf(t, c, base, "stay"); got != keepPID {
			t.Fatalf("reload %d: server keep runs as pid %d, was %d: an unchanged server was reopened", i, got, keepPID)
		}
	}
	time.Sleep(100 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	took := time.Since(start)

	if want := uint64(1 + successes); gens.Generation() != want {
		t.Errorf("generation %d after %d successful reloads, want %d", gens.Generation(), successes, want)
	}
	metricsText := get(t, c, base+"/metrics")
	for _, want := range []string{
		"heddle_config_generation " + strconv.Itoa(1+successes),
		`heddle_config_reloads_total{result="success"} ` + strconv.Itoa(successes),
		`heddle_config_reloads_total{result="failure"} ` + strconv.Itoa(failures),
	} {
		if !strings.Contains(metricsText, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !strings.Contains(logs.String(), "codes=CONFIG_PARSE") {
		t.Errorf("the log does not name the broken file's code:\n%s", logs.String())
	}

	total := 0
	for _, agent := range agents {
		for got, n := range outcomes[agent] {
			total += n
			if got == "ok" || (agent == "extra" && got == string(diag.AgentUnknown)) {
				continue
			}
			t.Errorf("agent %s: %d calls came to %s", agent, n, got)
		}
		if outcomes[agent]["ok"] == 0 {
			t.Errorf("agent %s: no call succeeded", agent)
		}
	}
	t.Logf("%d calls by %d callers during %d reloads (%d failed) in %v: %v", total, callers, reloads, failures, took.Round(time.Millisecond), outcomes)
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "took=") {
			t.Log(l)
		}
	}

	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := front.Shutdown(dctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	<-served
	tr.CloseIdleConnections()
	if err := gens.Close(); err != nil {
		t.Error(err)
	}
	slices.Sort(pids)
	pids = slices.Compact(pids)
	if left := proctest.WaitGone(pids, 5*time.Second); len(left) > 0 {
		t.Errorf("server processes %v of %v are left after close", left, pids)
	}
}

// get returns the body of a GET.
func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
