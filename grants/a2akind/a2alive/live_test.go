package a2alive_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds, both halves
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/memnet"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func compilePlan(t testing.TB, api string, agents map[string]string) *plan.Plan {
	t.Helper()
	return plantest.Must(t, api, agents)
}

// open opens a runtime whose agent "a" grants the remote agent "echo".
func open(t testing.TB, apiYAML string, agentYAML string) (*runtime.Runtime, *runtime.Toolset) {
	t.Helper()
	return openWith(t, apiYAML, agentYAML, runtime.Options{})
}

// onNet returns runtime options whose HTTP clients reach n, for tests in a
// synctest bubble; the transport's idle connections are closed when the
// test ends.
func onNet(t testing.TB, n *memnet.Network) runtime.Options {
	tr := n.Transport()
	t.Cleanup(tr.CloseIdleConnections)
	return runtime.Options{HTTPTransport: tr}
}

// openWith is open with opts.
func openWith(t testing.TB, apiYAML string, agentYAML string, opts runtime.Options) (*runtime.Runtime, *runtime.Toolset) {
	t.Helper()
	if agentYAML == "" {
		agentYAML = `capabilities: [{kind: a2a, agent: echo}]`
	}
	rt, err := runtime.Open(context.Background(), compilePlan(t, apiYAML, map[string]string{"a": agentYAML}), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ts, err := rt.Toolset("a")
	if err != nil {
		t.Fatal(err)
	}
	return rt, ts
}

// text concatenates a result's text parts.
func text(res *mcp.CallToolResult) string { return plantest.Text(res) }

func call(t *testing.T, ts *runtime.Toolset, msg string) *mcp.CallToolResult {
	t.Helper()
	res, err := ts.Call(context.Background(), "echo", map[string]any{"message": msg})
	if err != nil {
		t.Fatalf("call %q: %v", msg, err)
	}
	return res
}

// TestAnswers: each shape of answer, in both protocol versions. Each runs
// in a synctest bubble on an in-memory network, so polling a working task
// takes no time.
func TestAnswers(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		name := map[bool]string{false: "a2a-1.0", true: "a2a-0.3"}[legacy]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := memnet.New()
				f := newFakeAgent(t, func(f *fakeAgent) { f.legacy, f.net = legacy, n })
				_, ts := openWith(t, api("echo", f.srv.URL, ""), "", onNet(t, n))
				for _, c := range []struct {
					msg, want string
					isError   bool
				}{
					{"hello", "echo: hello", false},
					{"task: hi", "echo: hi", false},
					{"slow: x", "echo: slow done", false},
					{"fail: the disk is gone", "the remote agent's task was failed: the disk is gone", true},
					{"input: which region?", "the remote agent needs more than one message to answer (input_required): which region?", true},
					{"error", "the remote agent echo answered with an error: the model is overloaded (JSON-RPC code -32603)", true},
				} {
					res := call(t, ts, c.msg)
					if text(res) != c.want || res.IsError != c.isError || runtime.RefusalCode(res) != "" {
						t.Errorf("%q: %q (isError %v), want %q (isError %v)", c.msg, text(res), res.IsError, c.want, c.isError)
					}
				}
				methods, versions := f.seen()
				want := []string{"SendMessage", "GetTask", "1.0"}
				if legacy {
					want = []string{"message/send", "tasks/get", "0.3"}
				}
				if !slices.Contains(methods, want[0]) || !slices.Contains(methods, want[1]) || slices.ContainsFunc(versions, func(v string) bool { return v != want[2] }) {
					t.Errorf("methods %v, versions %v; want %v", methods, versions, want)
				}
			})
		})
	}
}

// TestToolDefinition: one tool named after the agent, the card's text in
// its description.
func TestToolDefinition(t *testing.T) {
	f := newFakeAgent(t, nil)
	rt, ts := open(t, api("echo", f.srv.URL, ""), "")
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 {
		t.Fatalf("tools = %v", tools)
	}
	tl := tools[0]
	if tl.Name != "echo" || tl.Kind != "a2a" || tl.Server != "echo" || tl.Destructive || tl.ReadOnly {
		t.Errorf("tool = %+v", tl)
	}
	for _, want := range []string{"Fake Echo", "Echoes what it is sent.", "Skills: echo (repeat text)"} {
		if !strings.Contains(tl.Description, want) {
			t.Errorf("description %q lacks %q", tl.Description, want)
		}
	}
	if res, _ := ts.Call(context.Background(), "echo", map[string]any{}); runtime.RefusalCode(res) != diag.ToolArgsInvalid {
		t.Errorf("no message: %v, want TOOL_ARGS_INVALID", res)
	}
	h := rt.Health()
	if len(h.Dependencies) != 1 || h.Dependencies[0].Kind != "a2a" || h.Dependencies[0].State != driver.StateReady ||
		!h.Dependencies[0].Required || !slices.Equal(h.Dependencies[0].Agents, []string{"a"}) || !h.Ready {
		t.Errorf("health = %+v", h)
	}
}

// TestAuth: the bearer strategy authenticates the card fetch and calls.
func TestAuth(t *testing.T) {
	t.Setenv("HEDDLE_TEST_A2A_TOKEN", "s3cret")
	f := newFakeAgent(t, func(f *fakeAgent) { f.token = "s3cret" })
	_, ts := open(t, api("echo", f.srv.URL, "      auth: {kind: bearer, token_ref: '${env:HEDDLE_TEST_A2A_TOKEN}'}\n"), "")
	if res := call(t, ts, "hello"); text(res) != "echo: hello" {
		t.Errorf("answer %q", text(res))
	}

	// Without the token, the card fetch is refused: unreachable at start-up.
	_, err := runtime.Open(context.Background(), compilePlan(t, api("echo", f.srv.URL, ""),
		map[string]string{"a": `capabilities: [{kind: a2a, agent: echo}]`}), runtime.Options{})
	if !diag.Has(err, diag.A2AAgentUnreachable) || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("err = %v, want A2A_AGENT_UNREACHABLE naming HTTP 401", err)
	}

	// A secret that does not resolve aborts start-up, whatever required says.
	_, err = runtime.Open(context.Background(), compilePlan(t,
		api("echo", f.srv.URL, "      required: false\n      auth: {kind: bearer, token_ref: '${env:HEDDLE_TEST_A2A_NOPE}'}\n"),
		map[string]string{"a": `capabilities: [{kind: a2a, agent: echo}]`}), runtime.Options{})
	if !diag.Has(err, diag.SecretUnresolved) {
		t.Errorf("err = %v, want SECRET_UNRESOLVED", err)
	}
}

// TestCredentialsStayOnOrigin: a card naming another origin is refused.
func TestCredentialsStayOnOrigin(t *testing.T) {
	elsewhere := httptest.NewServer(http.NotFoundHandler())
	defer elsewhere.Close()
	f := newFakeAgent(t, func(f *fakeAgent) { f.cardURL = elsewhere.URL + "/rpc" })
	_, err := runtime.Open(context.Background(), compilePlan(t, api("echo", f.srv.URL, ""),
		map[string]string{"a": `capabilities: [{kind: a2a, agent: echo}]`}), runtime.Options{})
	if !diag.Has(err, diag.A2AAgentUnreachable) || !strings.Contains(err.Error(), "another origin") {
		t.Errorf("err = %v", err)
	}
	if strings.Contains(err.Error(), elsewhere.URL) {
		t.Errorf("the error shows the URL: %v", err)
	}

	// Nor is a redirect to another origin followed: the strategy would add
	// the credentials to the redirected request.
	var leaked atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
	}))
	defer other.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	defer redirector.Close()
	t.Setenv("HEDDLE_TEST_A2A_TOKEN", "s3cret")
	_, err = runtime.Open(context.Background(), compilePlan(t,
		api("echo", redirector.URL, "      auth: {kind: bearer, token_ref: '${env:HEDDLE_TEST_A2A_TOKEN}'}\n"),
		map[string]string{"a": `capabilities: [{kind: a2a, agent: echo}]`}), runtime.Options{})
	if !diag.Has(err, diag.A2AAgentUnreachable) || leaked.Load() != 0 {
		t.Errorf("redirect: err = %v, credentials sent elsewhere %d times", err, leaked.Load())
	}
}

// TestUnreachable: a required agent fails start-up; an optional one is
// retried in the background, with the supervisor's own backoff, and its
// tool answers TOOL_UNAVAILABLE until the agent comes up. It runs in a
// synctest bubble on an in-memory network, so the backoff passes at once.
func TestUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		opts := onNet(t, n)
		l, err := n.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String() // nothing listens there now
		l.Close()
		_, err = runtime.Open(context.Background(), compilePlan(t, api("echo", "http://"+addr, ""),
			map[string]string{"a": `capabilities: [{kind: a2a, agent: echo}]`}), opts)
		var se *runtime.StartupError
		if !errors.As(err, &se) || len(se.Failures) != 1 || se.Failures[0].Name != "echo" || !diag.Has(err, diag.A2AAgentUnreachable) {
			t.Fatalf("required: err = %v, want A2A_AGENT_UNREACHABLE for echo", err)
		}
		// It says why, naming the host and port (never the URL, whose path
		// or query may hold a credential).
		if want := "connection refused by " + addr; !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "http://") {
			t.Errorf("required: %v, want %q and no URL", err, want)
		}

		rt, ts := openWith(t, api("echo", "http://"+addr, "      required: false\n"), "", opts)
		res := call(t, ts, "hello")
		if runtime.RefusalCode(res) != diag.ToolUnavailable {
			t.Fatalf("optional, down: %v, want TOOL_UNAVAILABLE", res)
		}
		h := rt.Health()
		if d := h.Dependencies[0]; d.State == driver.StateReady || d.Code != diag.A2AAgentUnreachable || d.Required || !h.Ready {
			t.Errorf("health = %+v", h)
		}

		// The agent comes up at that address after a while: the supervisor
		// finds it within its longest backoff, with no call to wake it.
		time.Sleep(time.Minute)
		if rt.Health().Dependencies[0].State == driver.StateReady {
			t.Fatal("ready while nothing listens")
		}
		l, err = n.Listen(addr)
		if err != nil {
			t.Fatalf("cannot listen on %s again: %v", addr, err)
		}
		f := newFakeAgent(t, func(f *fakeAgent) { f.net = n })
		up := &httptest.Server{Listener: l, Config: &http.Server{Handler: f.srv.Config.Handler}}
		up.Start()
		defer up.Close()
		time.Sleep(driver.DefaultBackoffMax)
		synctest.Wait() // the attempt that the backoff allowed has ended
		if d := rt.Health().Dependencies[0]; d.State != driver.StateReady {
			t.Fatalf("%v after the agent came up: %+v, want ready", driver.DefaultBackoffMax, d)
		}
		if res := call(t, ts, "hello"); text(res) != "echo: hello" {
			t.Errorf("after recovery: %q", text(res))
		}

		// It goes away again: the call answers TOOL_UNAVAILABLE and the agent
		// is down until it is back.
		up.Close()
		if res := call(t, ts, "hello"); runtime.RefusalCode(res) != diag.ToolUnavailable {
			t.Errorf("after it went away: %v, want TOOL_UNAVAILABLE", res)
		}
		if rt.Health().Dependencies[0].State == driver.StateReady {
			t.Error("the agent is still ready")
		}
	})
}

// TestDeadlines: the agent's timeout_ms is the transport deadline, to the
// millisecond on a synctest bubble's clock.
func TestDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		f := newFakeAgent(t, func(f *fakeAgent) { f.net = n })
		_, ts := openWith(t, api("echo", f.srv.URL, "      timeout_ms: 200\n"), "", onNet(t, n))
		start := time.Now()
		res := call(t, ts, "hang")
		if runtime.RefusalCode(res) != diag.TransportTimeout {
			t.Errorf("hang: %v, want TRANSPORT_TIMEOUT", res)
		}
		if d := time.Since(start); d != 200*time.Millisecond {
			t.Errorf("the call took %v, want timeout_ms (200ms)", d)
		}
		// The agent is not marked down by a slow answer.
		if res := call(t, ts, "hello"); text(res) != "echo: hello" {
			t.Errorf("after a timeout: %q", text(res))
		}
	})
}

// TestRecheckedByCall: a required remote agent that a call cannot reach is
// down at once — the next health report is not ready and says since when.
// After it has been away long enough for the supervisor's backoff to reach
// its cap, the first call once it is back succeeds at once: the call has
// the card fetched now rather than wait for the backoff. A 502 or 503 from
// a gateway in front of it is a connection failure too; a 504 is a
// gateway that gave up waiting, and leaves the agent up.
func TestRecheckedByCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		f := newFakeAgent(t, func(f *fakeAgent) { f.net = n })
		var fault atomic.Int32
		l, err := n.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c := int(fault.Load()); c != 0 {
				http.Error(w, http.StatusText(c), c)
				return
			}
			f.srv.Config.Handler.ServeHTTP(w, r)
		})
		up := &httptest.Server{Listener: l, Config: &http.Server{Handler: handler}}
		up.Start()
		rt, ts := openWith(t, api("echo", "http://"+addr, ""), "", onNet(t, n))
		if res := call(t, ts, "hello"); text(res) != "echo: hello" {
			t.Fatalf("before: %q", text(res))
		}

		fault.Store(http.StatusGatewayTimeout)
		if res := call(t, ts, "hello"); runtime.RefusalCode(res) != diag.TransportTimeout {
			t.Errorf("through a 504: %v, want TRANSPORT_TIMEOUT", res)
		}
		if !rt.Health().Ready {
			t.Error("a 504 made the agent down")
		}
		for _, c := range []int{http.StatusBadGateway, http.StatusServiceUnavailable} {
			fault.Store(int32(c))
			if res := call(t, ts, "hello"); runtime.RefusalCode(res) != diag.ToolUnavailable {
				t.Errorf("through a %d: %v, want TOOL_UNAVAILABLE", c, res)
			}
			if rt.Health().Ready {
				t.Errorf("ready right after a call was answered %d", c)
			}
			fault.Store(0)
			if res := call(t, ts, "hello"); text(res) != "echo: hello" {
				t.Errorf("once the gateway answered again: %q", text(res))
			}
		}

		up.Close()
		if res := call(t, ts, "hello"); runtime.RefusalCode(res) != diag.ToolUnavailable {
			t.Fatalf("after it went away: %v, want TOOL_UNAVAILABLE", res)
		}
		lost := time.Now()
		d := rt.Health().Dependencies[0]
		if rt.Health().Ready || d.State != driver.StateDown || d.Since == nil || d.Since.After(lost) {
			t.Fatalf("right after the failed call: ready %v, %+v; want down, since the call", rt.Health().Ready, d)
		}
		time.Sleep(10 * time.Minute)

		l, err = n.Listen(addr)
		if err != nil {
			t.Fatalf("cannot listen on %s again: %v", addr, err)
		}
		up = &httptest.Server{Listener: l, Config: &http.Server{Handler: handler}}
		up.Start()
		defer up.Close()
		start := time.Now()
		if res := call(t, ts, "hello"); text(res) != "echo: hello" {
			t.Fatalf("the first call once it was back: %v", res)
		}
		if waited := time.Since(start); waited > driver.DefaultBackoffFirst {
			t.Errorf("the first call once it was back waited %v", waited)
		}
		if !rt.Health().Ready {
			t.Error("not ready once a call reached it")
		}
	})
}
