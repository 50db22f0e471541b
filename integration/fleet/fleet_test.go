package fleet_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/proctest"
	"github.com/heddlehq/heddle/internal/testredis"
	"github.com/heddlehq/heddle/runtime"
)

// The rate limit of agent a: 10 calls a minute for each caller.
const (
	limitCalls = 10
	limitPer   = time.Minute
)

// apiYAML is the fleet's one configuration: the test MCP server over
// stdio, callers named by the proxy in front, the state in a shared Redis
// and one approval key for every worker, both given in the environment.
const apiYAML = `ai:
  mcp_servers:
    srv: {transport: stdio, command: {{testmcp}}}
serve:
  auth: {kind: trusted_headers, proxies: [127.0.0.1]}
  state:
    kind: redis
    url_ref: ${env:HEDDLE_REDIS_URL}
  approval_key_ref: ${env:HEDDLE_APPROVAL_KEY}
`

// The agents: a limits each caller, d defers its tools (a conversation
// loads them), b has neither.
var agents = map[string]string{
	"a": "capabilities: [{kind: mcp, server: srv}]\npolicies:\n  limits:\n    - {calls: 10, per: 1m, by: caller}\n",
	"d": "capabilities: [{kind: mcp, server: srv, defer: true}]\n",
	"b": "capabilities: [{kind: mcp, server: srv, include: [echo]}]\n",
}

// A fleet is the workers, the store they share and the balancer in front.
type fleet struct {
	redis   *testredis.Server
	workers []*worker
	lb      *balancer
}

// startFleet starts redis-server, three workers of one configuration and
// haproxy in front of them; the test's cleanup stops them all.
func startFleet(t *testing.T) *fleet {
	t.Helper()
	start := time.Now()
	f := &fleet{redis: testredis.Start(t)}
	dir := t.TempDir()
	files := map[string]string{"config/api.yaml": strings.ReplaceAll(apiYAML, "{{testmcp}}", testmcpBin)}
	for name, yaml := range agents {
		files["agents/"+name+"/agent.yaml"] = yaml
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HEDDLE_REDIS_URL=" + f.redis.URL(), "HEDDLE_APPROVAL_KEY=" + approvalKey(t)}
	for i := 1; i <= 3; i++ {
		f.workers = append(f.workers, startWorker(t, fmt.Sprintf("w%d", i), dir, env))
	}
	// The workers drain at once, not one after another.
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, w := range f.workers {
			wg.Go(func() { w.stop(t) })
		}
		wg.Wait()
	})
	f.lb = startHAProxy(t, f.workers)
	t.Logf("the fleet is up in %v: redis %s, workers %s, haproxy %s", time.Since(start).Round(time.Millisecond),
		f.redis.Addr(), strings.Join(addrs(f.workers), " "), f.lb.url)
	return f
}

// approvalKey is a random key of 48 characters.
func approvalKey(t *testing.T) string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func addrs(ws []*worker) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.name+"="+w.addr)
	}
	return out
}

// figures collects what each row measured, for the log and the docs.
type figures []string

func (f *figures) add(row, format string, args ...any) {
	*f = append(*f, fmt.Sprintf("%-16s ", row)+fmt.Sprintf(format, args...))
}

// TestFleet runs three workers of one configuration behind HAProxy's
// round robin, sharing a Redis, and asserts through the balancer that they
// behave as one worker: a rate limit, a conversation's loaded tools and an
// MCP session hold across them; a worker killed while calls flow costs at
// most two calls; a Redis restarted under calls costs only the calls made
// while it is away, and lets a limit admit at most one bucket more.
//
// The rows run in order on one fleet; each uses a caller of its own, so
// that no row's counts reach another's. From worker_killed on, two
// workers are left.
func TestFleet(t *testing.T) {
	need(t)
	f := startFleet(t)
	var figs figures
	defer func() { t.Logf("the fleet's figures:\n%s", strings.Join(figs, "\n")) }()

	t.Run("rate_limit", func(t *testing.T) {
		// One caller's 30 calls, 10 on each worker: the limit is the
		// fleet's, not each worker's.
		c := newCaller(t, f.lb.url, "alice")
		got := tally{}
		start := time.Now()
		for range 30 {
			got.add(c.echo("a", ""))
		}
		most := admitsAtMost(limitCalls, limitPer, time.Since(start))
		figs.add("rate_limit", "30 calls, limit 10/min by caller, at most %d admitted in %v: %s", most, time.Since(start).Round(time.Millisecond), got)
		if got["ok"] < limitCalls || got["ok"] > most || got["ok"]+got[string(diag.ToolRateLimited)] != 30 {
			t.Errorf("30 calls of one caller through the fleet: %s; want %d admitted (at most %d with what the bucket refilled) and the others %s",
				got, limitCalls, most, diag.ToolRateLimited)
		}
	})

	t.Run("conversation", func(t *testing.T) {
		// The conversation loads echo on one worker; the next calls reach
		// each worker in turn.
		c := newCaller(t, f.lb.url, "bob")
		if o := c.call("d", runtime.LoadToolsName, "c1", map[string]any{"names": []string{"echo"}}); !o.ok() {
			t.Fatalf("load_tools in c1: %s", o)
		}
		got := tally{}
		for range 6 {
			got.add(c.echo("d", "c1"))
		}
		figs.add("conversation", "load_tools [echo] in c1, then 6 calls of echo in c1: %s", got)
		if got["ok"] != 6 {
			t.Errorf("6 calls of a tool conversation c1 loaded: %s; want ok 6", got)
		}
	})

	t.Run("mcp_session", func(t *testing.T) {
		// A host's session at 2025-11-25: initialize reaches one worker,
		// each later request (initialized, the GET stream, each listing)
		// the next.
		got, version := mcpListings(t, f.lb.url, "carol", 6)
		figs.add("mcp_session", "a session at 2025-11-25 (negotiated %q), then 6 tools/list: %s", version, got)
		if version != "" && version != "2025-11-25" {
			t.Errorf("the session's protocol is %q, want 2025-11-25", version)
		}
		if got["ok"] != 6 {
			t.Errorf("6 tools/list in one MCP session through the fleet: %s; want ok 6", got)
		}
	})

	t.Run("worker_killed", func(t *testing.T) {
		// Worker 1 is killed as call 21 of 60 is sent, by a caller without
		// limits: the call it holds may fail, and haproxy sends nothing
		// more to it (its health check, and a retry of a refused
		// connection at another worker).
		w := f.workers[0]
		procs := w.descendants()
		if len(procs) == 0 {
			t.Errorf("worker %s has no stdio server", w.name)
		}
		c := newCaller(t, f.lb.url, "dave")
		kill := make(chan struct{})
		type killed struct {
			out time.Duration // from SIGKILL to DOWN in haproxy's view
			err error
		}
		res := make(chan killed, 1)
		go func() {
			<-kill
			w.kill()
			out, err := f.lb.waitState(w.name, "DOWN", 5*time.Second)
			res <- killed{out, err}
		}()
		got := tally{}
		var failed []string
		for i := range 60 {
			if i == 20 {
				close(kill)
			}
			o := c.echo("b", "c1")
			got.add(o)
			if !o.ok() {
				failed = append(failed, fmt.Sprintf("call %d: %s", i+1, o))
			}
		}
		k := <-res
		if k.err != nil {
			t.Error(k.err)
		}
		which := ""
		if len(failed) > 0 {
			which = " (" + strings.Join(failed, "; ") + ")"
		}
		figs.add("worker_killed", "60 calls, w1 killed at call 21 and out of haproxy's turn %v later: %s%s", k.out.Round(time.Millisecond), got, which)
		if got.failed() > 2 {
			t.Errorf("60 calls while a worker was killed: %s; want at most 2 failed: %s", got, strings.Join(failed, "; "))
		}
		// heddle's watchdog ends the stdio servers of a worker that was
		// killed: nothing of it is left.
		if left := proctest.WaitGone(procs, 5*time.Second); len(left) > 0 {
			t.Errorf("processes of the killed worker outlived it by 5 s: %v", left)
		}
	})

	t.Run("store_restarted", func(t *testing.T) {
		storeRestarted(t, f, &figs)
	})
}

// outage is how long Redis stays away: five of haproxy's health checks,
// so that a worker that is not ready without its store is taken out of
// turn, and must be put back once the store returns.
const outage = time.Second

// pace is the gap between one caller's calls while Redis is away and
// while the fleet recovers: a steady flow, not a burst.
const pace = 20 * time.Millisecond

// storeRestarted stops Redis for outage, then starts it again, while one
// caller calls agent a (10 calls a minute) at a steady pace. Redis keeps
// nothing across the restart (no persistence), so the caller's bucket is
// full again after it: the calls admitted in all are at most those
// admitted before it plus one bucket (and its refill). While Redis is away
// none is admitted (serve.state.on_error closed): each is refused
// STATE_UNAVAILABLE by a worker, or 503 by haproxy once no worker is
// ready. Calls must recover within 5 s of Redis' return.
func storeRestarted(t *testing.T, f *fleet, figs *figures) {
	c := newCaller(t, f.lb.url, "erin")
	before, down, recovering, after := tally{}, tally{}, tally{}, tally{}
	for range 5 {
		before.add(c.echo("a", ""))
	}
	f.redis.Stop()
	stopped := time.Now()
	unready := "no"
	for time.Since(stopped) < outage {
		down.add(c.echo("a", ""))
		if st, err := f.lb.states(); unready == "no" && err == nil && allDown(st) {
			unready = time.Since(stopped).Round(time.Millisecond).String() + " after it stopped"
		}
		time.Sleep(pace)
	}
	f.redis.Start()
	back := time.Now()
	var recovered time.Duration
	for {
		o := c.echo("a", "")
		if o.limiter() {
			recovered = time.Since(back)
			after.add(o)
			break
		}
		recovering.add(o)
		if time.Since(back) > 10*time.Second {
			t.Fatalf("calls did not recover within 10 s of Redis' return: %s", recovering)
		}
		time.Sleep(pace)
	}
	for range 20 {
		after.add(c.echo("a", ""))
	}
	admitted := before["ok"] + down["ok"] + recovering["ok"] + after["ok"]
	most := before["ok"] + admitsAtMost(limitCalls, limitPer, time.Since(back))
	figs.add("store_restarted", "5 calls before: %s; Redis away %v: %s, every worker out of haproxy's turn: %s; "+
		"recovered %v after its return (meanwhile %s); then %d calls: %s; admitted %d in all, at most %d",
		before, outage, down, unready, recovered.Round(time.Millisecond), recovering, after["ok"]+after[string(diag.ToolRateLimited)], after, admitted, most)
	if before["ok"] != 5 {
		t.Errorf("5 calls of a new caller before the restart: %s, want ok 5", before)
	}
	if down["ok"] > 0 {
		t.Errorf("while Redis was away the fleet admitted %d calls (%s); with on_error closed it must admit none", down["ok"], down)
	}
	for _, tl := range []tally{down, recovering} {
		for k := range tl {
			if !strings.Contains(k, string(diag.StateUnavailable)) && k != "HTTP 503 (haproxy)" {
				t.Errorf("a call while Redis was away answered %s; want %s, or haproxy's 503 while no worker is ready", k, diag.StateUnavailable)
			}
		}
	}
	if recovered > 5*time.Second {
		t.Errorf("calls recovered %v after Redis came back, want within 5 s", recovered)
	}
	if admitted > most {
		t.Errorf("with a restart of Redis the limit admitted %d calls of one caller, want at most %d (%d before it, and one bucket of %d after)",
			admitted, most, before["ok"], limitCalls)
	}
}

// mcpListings opens an MCP session at 2025-11-25 on agent a through the
// balancer, as subject, lists the tools n times and tallies the listings:
// ok when the listing holds echo. It returns the session's protocol, or ""
// when the session did not open (the tally then says why, n times).
func mcpListings(t *testing.T, base, subject string, n int) (tally, string) {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: subjectTransport{subject: subject, next: tr}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "heddle-fleet-test", Version: "0.1.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp/a", HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	got := tally{}
	if err != nil {
		got["connect: "+mcpError(err)] = n
		return got, ""
	}
	defer cs.Close()
	for range n {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := cs.ListTools(lctx, nil)
		cancel()
		switch {
		case err != nil:
			got["tools/list: "+mcpError(err)]++
		case !slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "echo" }):
			got["tools/list without echo"]++
		default:
			got["ok"]++
		}
	}
	return got, cs.InitializeResult().ProtocolVersion
}

// mcpError is err in a few words for a tally.
func mcpError(err error) string {
	if errors.Is(err, mcp.ErrSessionMissing) {
		return "session not found (404)"
	}
	if errors.Is(err, mcp.ErrConnectionClosed) {
		return "connection closed"
	}
	s := err.Error()
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return s
}

// subjectTransport sets the caller's X-Heddle-Subject on each request, as
// the proxy in front of the workers would.
type subjectTransport struct {
	subject string
	next    http.RoundTripper
}

func (s subjectTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Heddle-Subject", s.subject)
	return s.next.RoundTrip(r)
}
