package integration

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/modtest"
)

// The two MCP revisions the facade speaks, chosen per request.
const (
	sessionEra = "2025-11-25" // sessions by initialize; approval by elicitation in the session
	modernEra  = "2026-07-28" // stateless; approval answered by an input_required result
)

// Tools of go-sdk's conformance fixture server (conformance/everything-server)
// that TestEras calls.
const (
	plainTool = "test_simple_text"
	plainText = "This is a simple text response for testing."
	// approvedTool is made destructive by the operator's override, so that
	// its calls need approval (policies.approval: ask). Its result shows the
	// arguments it ran with.
	approvedTool   = "json_schema_2020_12_tool"
	approvedPrefix = "JSON Schema 2020-12 tool called with: "
	// askingTool answers input_required, asking "What is your name?" under
	// the id user_name, and then "Hello, <name>!".
	askingTool = "test_input_required_result_elicitation"
	askingText = "What is your name?"
	// stateTool answers input_required with a requestState of its own,
	// upstreamState, and "state-ok: …" once it gets it back.
	stateTool     = "test_input_required_result_request_state"
	upstreamState = "request_state"
)

// tapArg, first on the command line of the test binary, makes it a tap
// (runTap) rather than the tests: os.Args is then tapArg, the log and the
// server's command.
const tapArg = "heddle-eras-tap"

func init() {
	if len(os.Args) == 4 && os.Args[1] == tapArg {
		os.Exit(runTap(os.Args[2], os.Args[3]))
	}
}

// runTap runs server as its child over stdio, and appends each line its
// client sends it to the file logPath before passing the line on: the log
// holds every request the server received, written before the server saw
// it. The server's output goes straight to the tap's.
func runTap(logPath, server string) int {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tap:", err)
		return 1
	}
	cmd := exec.Command(server)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	in, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tap:", err)
		return 1
	}
	r := bufio.NewReaderSize(os.Stdin, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if _, err := log.Write(line); err != nil {
				fmt.Fprintln(os.Stderr, "tap:", err)
				break
			}
			if _, err := in.Write(line); err != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = in.Close()
	if err := cmd.Wait(); err != nil {
		return 1
	}
	return 0
}

// eras is one heddle serve with two agents, each granted one instance of
// the fixture server behind a tap: agent old's server is pinned to
// 2025-11-25 (protocol_version), agent new's negotiates (auto, 2026-07-28).
type eras struct {
	base   string
	client *http.Client
	logs   map[string]string // agent → its server's tap log
}

// upstreamEra is what each agent's server is pinned to: "" is auto.
var upstreamEra = map[string]string{"old": sessionEra, "new": ""}

// TestEras: heddle serve's facade, used by hosts of both revisions (go-sdk's
// client pinned to 2025-11-25, and as it is, 2026-07-28) in front of
// upstream servers of both (the fixture pinned to 2025-11-25, and auto):
// in each of the four combinations a host lists the tools, calls a plain
// tool, and calls a destructive one, approving it (it runs once) and
// declining it (TOOL_APPROVAL_REQUIRED, it does not run). An upstream
// server's own input_required reaches either host and its answer the
// server. Plain HTTP requests of 2026-07-28 show the facade's
// input_required on the wire: the upstream's requests under its ids with a
// requestState of the facade's, and approval's state accepted once, for
// its own call only.
func TestEras(t *testing.T) {
	e := startEras(t)
	for _, hostEra := range []string{sessionEra, modernEra} {
		for _, agent := range []string{"old", "new"} {
			name := "host-" + hostEra + "/upstream-" + cmp.Or(upstreamEra[agent], "auto")
			t.Run(name, func(t *testing.T) { e.testCombination(t, agent, hostEra) })
		}
	}
	t.Run("upstream-input", func(t *testing.T) {
		for _, hostEra := range []string{sessionEra, modernEra} {
			t.Run("host-"+hostEra, func(t *testing.T) {
				h := e.connect(t, "new", hostEra)
				h.answer(func(msg string) *mcp.ElicitResult {
					if msg == askingText {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}
					}
					return &mcp.ElicitResult{Action: "decline"}
				})
				res := h.call(t, askingTool, nil)
				if got := resultText(res); res.IsError || got != "Hello, Ada!" {
					t.Errorf("%s: %q (isError %v), want Hello, Ada!", askingTool, got, res.IsError)
				}
				if asked := h.asked(); !slices.Equal(asked, []string{askingText}) {
					t.Errorf("the host was asked %q, want only %q", asked, askingText)
				}
			})
		}
		t.Run("raw", e.testRawUpstreamInput)
	})
	t.Run("raw-approval", func(t *testing.T) {
		for _, agent := range []string{"old", "new"} {
			t.Run("upstream-"+cmp.Or(upstreamEra[agent], "auto"), func(t *testing.T) { e.testRawApproval(t, agent) })
		}
	})
}

// testCombination is one host era in front of one agent's server.
func (e *eras) testCombination(t *testing.T, agent, hostEra string) {
	h := e.connect(t, agent, hostEra)
	if got := h.cs.InitializeResult().ProtocolVersion; got != hostEra {
		t.Fatalf("the host negotiated %s, want %s", got, hostEra)
	}

	t.Run("list", func(t *testing.T) {
		res, err := h.cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		tools := map[string]*mcp.Tool{}
		for _, tl := range res.Tools {
			tools[tl.Name] = tl
		}
		for _, name := range []string{plainTool, approvedTool, askingTool} {
			if tools[name] == nil {
				t.Errorf("%s is not listed", name)
			}
		}
		if tl := tools[approvedTool]; tl != nil && (tl.Annotations == nil || tl.Annotations.DestructiveHint == nil || !*tl.Annotations.DestructiveHint) {
			t.Errorf("%s's annotations %+v: want destructiveHint true (the operator's override)", approvedTool, tl.Annotations)
		}
	})

	t.Run("plain", func(t *testing.T) {
		res := h.call(t, plainTool, nil)
		if got := resultText(res); res.IsError || got != plainText {
			t.Errorf("%s: %q (isError %v), want %q", plainTool, got, res.IsError, plainText)
		}
		if asked := h.asked(); len(asked) > 0 {
			t.Errorf("a call that needs no approval asked the host %q", asked)
		}
	})

	args := map[string]any{"name": "Ada-" + hostEra, "email": "ada@example.com"}
	t.Run("approve", func(t *testing.T) {
		before := len(e.calls(t, agent, approvedTool))
		h.answer(func(string) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "accept"} })
		res := h.call(t, approvedTool, args)
		if got := resultText(res); res.IsError || !strings.HasPrefix(got, approvedPrefix) || !strings.Contains(got, `"name":"Ada-`+hostEra+`"`) {
			t.Errorf("%s accepted: %q (isError %v), want the tool's result with its arguments", approvedTool, got, res.IsError)
		}
		h.wantAskedFor(t, approvedTool)
		calls := e.calls(t, agent, approvedTool)
		if len(calls) != before+1 {
			t.Fatalf("the server received %s %d times, want once", approvedTool, len(calls)-before)
		}
		// The call reached the server in the server's era.
		want := cmp.Or(upstreamEra[agent], modernEra)
		if got := calls[len(calls)-1]; got != want {
			t.Errorf("the server received the call at %s, want %s", got, want)
		}
	})

	t.Run("decline", func(t *testing.T) {
		before := len(e.calls(t, agent, approvedTool))
		h.answer(func(string) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} })
		res := h.call(t, approvedTool, args)
		if code, _ := res.Meta["code"].(string); !res.IsError || code != string(diag.ToolApprovalRequired) {
			t.Errorf("%s declined: %q (isError %v, code %q), want a %s refusal", approvedTool, resultText(res), res.IsError, code, diag.ToolApprovalRequired)
		}
		h.wantAskedFor(t, approvedTool)
		if n := len(e.calls(t, agent, approvedTool)) - before; n != 0 {
			t.Errorf("the server received %s %d times after the host declined, want none", approvedTool, n)
		}
	})
}

// testRawUpstreamInput calls the new server's tools that answer
// input_required with plain HTTP at 2026-07-28, and checks what the host
// is answered: the server's input requests under its own ids, a
// requestState of the facade's, and the facade's name.
func (e *eras) testRawUpstreamInput(t *testing.T) {
	first := e.raw(t, "new", askingTool, nil, nil, "").wantResult(t)
	first.wantServer(t, "heddle/new")
	if first.ResultType != "input_required" {
		t.Fatalf("resultType %q, want input_required", first.ResultType)
	}
	ir, ok := first.InputRequests["user_name"]
	if !ok || ir.Method != "elicitation/create" || ir.Params.Message != askingText {
		t.Errorf("inputRequests %+v: want user_name, an elicitation asking %q", first.InputRequests, askingText)
	}
	if first.RequestState == "" {
		t.Error("no requestState: the facade's own, sealed, is expected")
	}
	answer := map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}
	done := e.raw(t, "new", askingTool, nil, answer, first.RequestState).wantResult(t)
	done.wantServer(t, "heddle/new")
	if got := done.text(); done.ResultType == "input_required" || got != "Hello, Ada!" {
		t.Errorf("the retry: resultType %q, text %q; want Hello, Ada!", done.ResultType, got)
	}

	// A server's own requestState is carried inside the facade's, never
	// shown to the host, and reaches the server again on the retry.
	first = e.raw(t, "new", stateTool, nil, nil, "").wantResult(t)
	if first.ResultType != "input_required" || first.RequestState == "" {
		t.Fatalf("%s: resultType %q, requestState %q: want input_required with a state", stateTool, first.ResultType, first.RequestState)
	}
	if strings.Contains(first.RequestState, upstreamState) {
		t.Errorf("requestState %q holds the server's own %q in plain", first.RequestState, upstreamState)
	}
	answer = map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"ok": true}}}
	done = e.raw(t, "new", stateTool, nil, answer, first.RequestState).wantResult(t)
	if got := done.text(); !strings.HasPrefix(got, "state-ok:") {
		t.Errorf("%s's retry: %q (resultType %q), want state-ok: the server got its state back", stateTool, got, done.ResultType)
	}
}

// testRawApproval approves a destructive call with plain HTTP at
// 2026-07-28: input_required with heddle_approval, then the retry with the
// answer and the state runs the tool once. The state is then spent; an
// altered state and a state sent with other arguments are refused too.
func (e *eras) testRawApproval(t *testing.T, agent string) {
	args := map[string]any{"name": "Raw", "email": "raw@example.com"}
	accept := map[string]any{"heddle_approval": map[string]any{"action": "accept"}}
	ask := func(t *testing.T) string {
		t.Helper()
		first := e.raw(t, agent, approvedTool, args, nil, "").wantResult(t)
		first.wantServer(t, "heddle/"+agent)
		ir, ok := first.InputRequests["heddle_approval"]
		if first.ResultType != "input_required" || !ok || ir.Method != "elicitation/create" || !strings.Contains(ir.Params.Message, approvedTool) || first.RequestState == "" {
			t.Fatalf("the first call: resultType %q, inputRequests %+v, requestState %q; want input_required, heddle_approval naming %s, a state",
				first.ResultType, first.InputRequests, first.RequestState, approvedTool)
		}
		return first.RequestState
	}
	count := func() int { return len(e.calls(t, agent, approvedTool)) }

	before := count()
	state := ask(t)
	if n := count() - before; n != 0 {
		t.Fatalf("the server received %s %d times before it was approved", approvedTool, n)
	}
	done := e.raw(t, agent, approvedTool, args, accept, state).wantResult(t)
	if got := done.text(); done.IsError || done.ResultType == "input_required" || !strings.HasPrefix(got, approvedPrefix) || !strings.Contains(got, `"name":"Raw"`) {
		t.Errorf("the approved retry: resultType %q, %q (isError %v); want the tool's result", done.ResultType, got, done.IsError)
	}
	if n := count() - before; n != 1 {
		t.Errorf("the server received %s %d times after the approval, want once", approvedTool, n)
	}

	e.raw(t, agent, approvedTool, args, accept, state).wantStateInvalid(t, "the same retry again")

	// A fresh state, refused altered and with other arguments, and then
	// accepted as it is: neither refusal spent it.
	state = ask(t)
	i := len(state) / 2
	c := "A"
	if state[i] == 'A' {
		c = "B"
	}
	altered := state[:i] + c + state[i+1:]
	e.raw(t, agent, approvedTool, args, accept, altered).wantStateInvalid(t, "a state with one character changed")
	other := map[string]any{"name": "Other", "email": "raw@example.com"}
	e.raw(t, agent, approvedTool, other, accept, state).wantStateInvalid(t, "the state with other arguments")
	done = e.raw(t, agent, approvedTool, args, accept, state).wantResult(t)
	if done.IsError || !strings.HasPrefix(done.text(), approvedPrefix) {
		t.Errorf("the fresh state, as sealed, after the refusals: %q (isError %v); want the tool's result", done.text(), done.IsError)
	}
	if n := count() - before; n != 2 {
		t.Errorf("the server received %s %d times, want twice (the two approved retries)", approvedTool, n)
	}
}

// startEras builds heddle and the fixture, and runs heddle serve with
// agents old and new until the test ends; it then requires heddle serve to
// exit cleanly and every process it started to be gone.
func startEras(t *testing.T) *eras {
	t.Helper()
	root := modtest.Root(t)
	bin := t.TempDir()
	heddleBin, fixture := filepath.Join(bin, "heddle"), filepath.Join(bin, "everything-server")
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, b := range [][2]string{{heddleBin, "./cmd/heddle"}, {fixture, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"}} {
		wg.Go(func() {
			args := []string{"build", "-o", b[0]}
			if raceEnabled() {
				args = append(args, "-race") // reuses what this test run compiled
			}
			build := exec.Command("go", append(args, b[1])...)
			build.Dir = root
			if out, err := build.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("building %s: %v\n%s", b[1], err, out)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("built heddle and the fixture in %s (race %v)", time.Since(start).Round(time.Millisecond), raceEnabled())

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mark := fmt.Sprintf("eras%d-%d", time.Now().UnixNano(), markSeq.Add(1))
	e := &eras{logs: map[string]string{}}
	api := "serve:\n  auth: {kind: none}\nai:\n  mcp_servers:\n"
	for _, agent := range []string{"old", "new"} {
		e.logs[agent] = filepath.Join(dir, agent+".log")
		api += fmt.Sprintf("    up_%s:\n      transport: stdio\n      command: %s\n      args: [%s, %s, %s]\n      env: {%s: %s, GORACE: %s}\n      tools: {%s: {destructive: true}}\n",
			agent, strconv.Quote(self), tapArg, strconv.Quote(e.logs[agent]), strconv.Quote(fixture), markEnv, mark, noExitSleep, approvedTool)
		if v := upstreamEra[agent]; v != "" {
			api += fmt.Sprintf("      protocol_version: %q\n", v)
		}
		modtest.WriteFile(t, filepath.Join(dir, "agents", agent, "agent.yaml"),
			"capabilities: [{kind: mcp, server: up_"+agent+"}]\npolicies: {approval: ask}\n")
	}
	modtest.WriteFile(t, filepath.Join(dir, "config/api.yaml"), api)

	// Cleanups run last first: the processes are found while heddle serve
	// runs (the newest cleanup), heddle serve is stopped (startHeddleServe's),
	// then they must be gone (this one).
	var procs []proc
	t.Cleanup(func() { requireGone(t, procs, 10*time.Second) })
	// A program built with -race sleeps a second as it exits, unless
	// GORACE says otherwise: heddle serve, and each tap it stops.
	t.Setenv("GORACE", noExitSleep)
	start = time.Now()
	e.base = startHeddleServe(t, heddleBin, dir)
	t.Logf("heddle serve listened in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		procs = procsWithEnv(markEnv + "=" + mark)
		for _, p := range procs {
			procs = append(procs, processGroup(p.pid)...)
		}
		if len(procs) < 4 { // two taps, two servers
			t.Errorf("found %d processes of the servers before stopping heddle serve, want 4 or more", len(procs))
		}
	})
	tr := &http.Transport{}
	e.client = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections) // after the hosts closed, before goleak looks
	return e
}

// noExitSleep is GORACE for a program that exits at once.
const noExitSleep = "atexit_sleep_ms=0"

// raceEnabled reports whether this test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// calls are the revisions at which agent's server received each
// tools/call of tool, in order: a call's _meta says 2026-07-28; one without
// is of the session, whose revision initialize asked for.
func (e *eras) calls(t *testing.T, agent, tool string) []string {
	t.Helper()
	b, err := os.ReadFile(e.logs[agent])
	if err != nil {
		t.Fatal(err)
	}
	session := "(no initialize)"
	var out []string
	for line := range bytes.Lines(b) {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name            string         `json:"name"`
				ProtocolVersion string         `json:"protocolVersion"`
				Meta            map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			t.Fatalf("the tap logged %q: %v", line, err)
		}
		switch {
		case msg.Method == "initialize":
			session = msg.Params.ProtocolVersion
		case msg.Method == "tools/call" && msg.Params.Name == tool:
			v, ok := msg.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
			if !ok {
				v = session
			}
			out = append(out, v)
		}
	}
	return out
}

// host is go-sdk's client connected to an agent's /mcp/{agent}. Its
// elicitation handler records each message it is sent and answers it with
// what answer set.
type host struct {
	cs *mcp.ClientSession

	mu      sync.Mutex
	msgs    []string
	answers func(msg string) *mcp.ElicitResult
}

// connect connects a host of era to agent's facade: sessionEra pins
// 2025-11-25, modernEra is go-sdk's default. The session closes when the
// test ends.
func (e *eras) connect(t *testing.T, agent, era string) *host {
	t.Helper()
	h := &host{}
	c := mcp.NewClient(&mcp.Implementation{Name: "eras-host", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.msgs = append(h.msgs, req.Params.Message)
			if h.answers == nil {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return h.answers(req.Params.Message), nil
		},
	})
	var opts *mcp.ClientSessionOptions
	if era == sessionEra {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: sessionEra}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.base + "/mcp/" + agent, HTTPClient: e.client}, opts)
	if err != nil {
		t.Fatalf("connecting to /mcp/%s: %v", agent, err)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("closing the host's session: %v", err)
		}
	})
	h.cs = cs
	return h
}

// answer sets how the host answers elicitations, and forgets those it was sent.
func (h *host) answer(f func(msg string) *mcp.ElicitResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answers, h.msgs = f, nil
}

// asked returns the messages the host was sent since it was last asked,
// and forgets them.
func (h *host) asked() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.msgs
	h.msgs = nil
	return m
}

// wantAskedFor requires the host to have been asked once, about tool.
func (h *host) wantAskedFor(t *testing.T, tool string) {
	t.Helper()
	if asked := h.asked(); len(asked) != 1 || !strings.Contains(asked[0], tool) {
		t.Errorf("the host was asked %q, want one approval naming %s", asked, tool)
	}
}

func (h *host) call(t *testing.T, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	p := &mcp.CallToolParams{Name: tool}
	if args != nil {
		p.Arguments = args
	}
	res, err := h.cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// rawAnswer is a JSON-RPC response to a tools/call of 2026-07-28, as the
// wire has it.
type rawAnswer struct {
	Result *rawResult `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Code string `json:"code"`
		} `json:"data"`
	} `json:"error"`
	body string // for failure messages
}

type rawResult struct {
	ResultType    string `json:"resultType"`
	InputRequests map[string]struct {
		Method string `json:"method"`
		Params struct {
			Message string `json:"message"`
		} `json:"params"`
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
	Content      []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool                       `json:"isError"`
	Meta    map[string]json.RawMessage `json:"_meta"`
}

func (r *rawResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// wantServer requires the result's _meta to name the server name.
func (r *rawResult) wantServer(t *testing.T, name string) {
	t.Helper()
	var info struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(r.Meta[mcp.MetaKeyServerInfo], &info); err != nil || info.Name != name {
		t.Errorf("_meta's %s is %s, want the name %s", mcp.MetaKeyServerInfo, r.Meta[mcp.MetaKeyServerInfo], name)
	}
}

func (a rawAnswer) wantResult(t *testing.T) *rawResult {
	t.Helper()
	if a.Result == nil {
		t.Fatalf("no result: %s", a.body)
	}
	return a.Result
}

// wantStateInvalid requires a's error to be -32602 with
// REQUEST_STATE_INVALID in its data.
func (a rawAnswer) wantStateInvalid(t *testing.T, what string) {
	t.Helper()
	if a.Error == nil || a.Error.Code != -32602 || a.Error.Data.Code != string(diag.RequestStateInvalid) {
		t.Errorf("%s: %s; want a JSON-RPC error -32602 with data.code %s", what, a.body, diag.RequestStateInvalid)
		return
	}
	t.Logf("%s: %s", what, a.Error.Message)
}

// raw calls tool of agent with a plain HTTP POST of 2026-07-28, with the
// host's answers and the requestState when given, and returns the
// response, read from JSON or from an event stream.
func (e *eras) raw(t *testing.T, agent, tool string, args, responses map[string]any, state string) rawAnswer {
	t.Helper()
	params := map[string]any{
		"name": tool,
		"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:    modernEra,
			mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{}},
		},
	}
	if args != nil {
		params["arguments"] = args
	}
	if responses != nil {
		params["inputResponses"] = responses
	}
	if state != "" {
		params["requestState"] = state
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.base+"/mcp/"+agent, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", modernEra)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("POST /mcp/%s: %v", agent, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	msg := b
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/event-stream" {
		msg = nil
		for _, data := range sseData(b) {
			var probe struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(data, &probe) == nil && string(probe.ID) == "7" && (probe.Result != nil || probe.Error != nil) {
				msg = data
			}
		}
		if msg == nil {
			t.Fatalf("the event stream holds no response to the call:\n%s", b)
		}
	}
	a := rawAnswer{body: resp.Status + " " + string(msg)}
	if err := json.Unmarshal(msg, &a); err != nil {
		t.Fatalf("POST /mcp/%s %s: %s: %q: %v", agent, tool, resp.Status, msg, err)
	}
	// A JSON-RPC error may come with any status (go-sdk answers -32602
	// with 400); a result comes with 200.
	if a.Result != nil && resp.StatusCode != http.StatusOK {
		t.Errorf("POST /mcp/%s %s: a result with status %s", agent, tool, resp.Status)
	}
	return a
}

// sseData is the data of each event of an event stream: its data lines,
// joined by newlines.
func sseData(stream []byte) [][]byte {
	var events [][]byte
	var cur []byte
	has := false
	for line := range strings.Lines(string(stream)) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if has {
				events = append(events, cur)
			}
			cur, has = nil, false
		case strings.HasPrefix(line, "data:"):
			if has {
				cur = append(cur, '\n')
			}
			cur = append(cur, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
			has = true
		}
	}
	if has {
		events = append(events, cur)
	}
	return events
}
