package usecaselive_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/heddlehq/heddle"
	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds, both halves
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/grants/usecasekind"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/syncbuf"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/usecase"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Identity reports who the operation ran for.
type Identity struct {
	Subject string   `json:"subject"`
	Roles   []string `json:"roles"`
	Tenant  string   `json:"tenant"`
}

type searchIn struct {
	Query string `json:"query"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many"`
}

var whoamiCalls atomic.Int64

func init() {
	usecase.Register("t.whoami", func(ctx context.Context, _ struct{}) (Identity, error) {
		whoamiCalls.Add(1)
		c := heddle.Caller(ctx)
		return Identity{Subject: c.Subject, Roles: c.Roles, Tenant: c.Claims["tenant"]}, nil
	}, usecase.ReadOnly())
	usecase.Register("search", func(_ context.Context, in searchIn) ([]string, error) {
		return []string{"usecase:" + in.Query}, nil
	}, usecase.ReadOnly())
	usecase.Register("t.fail", func(context.Context, struct{}) (struct{}, error) {
		return struct{}{}, errors.New("the incident is locked by another change")
	}, usecase.ReadOnly())
	usecase.Register("t.refuse", func(context.Context, struct{}) (struct{}, error) {
		return struct{}{}, diag.New(diag.ToolDenied, "closing incidents is frozen")
	}, usecase.ReadOnly())
	usecase.Register("t.panic", func(context.Context, struct{}) (struct{}, error) {
		panic("nil map in the incident store")
	}, usecase.ReadOnly())
	usecase.Register("t.block", func(ctx context.Context, _ struct{}) (struct{}, error) {
		<-ctx.Done()
		return struct{}{}, ctx.Err()
	}, usecase.ReadOnly())
	usecase.Register("t.destroy", func(context.Context, struct{}) (string, error) { return "gone", nil },
		usecase.Destructive())
}

// compilePlan compiles api.yaml and agents (name → agent.yaml) with every
// registered use case.
func compilePlan(t testing.TB, api string, agents map[string]string) *plan.Plan {
	t.Helper()
	return plantest.Must(t, api, agents, usecase.Keys()...)
}

func openToolset(t testing.TB, api, agent string, opts runtime.Options) *runtime.Toolset {
	t.Helper()
	rt, err := runtime.Open(context.Background(), compilePlan(t, api, map[string]string{"a": agent}), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ts, err := rt.Toolset("a")
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// text concatenates a result's text parts.
func text(res *mcp.CallToolResult) string { return plantest.Text(res) }

var (
	alice = heddle.Identity{Subject: "alice", Roles: []string{"sre"}, Claims: map[string]string{"tenant": "acme"}}
	bob   = heddle.Identity{Subject: "bob", Roles: []string{"dev"}, Claims: map[string]string{"tenant": "acme"}}
)

// TestCallerReachesTheOperation: a CEL rule on caller.roles decides before
// the operation runs (to a caller it denies whatever the arguments, the
// tool does not exist), and the operation sees the caller the toolset got.
func TestCallerReachesTheOperation(t *testing.T) {
	ts := openToolset(t, "ai: {}\n", `
capabilities: [{kind: usecase, keys: [t.whoami]}]
policies:
  rules:
    - {when: '!("sre" in caller.roles)', effect: deny}
`, runtime.Options{})
	ctx := context.Background()

	before := whoamiCalls.Load()
	res, err := ts.Call(heddle.WithCaller(ctx, bob), "t_whoami", nil)
	if err != nil || runtime.RefusalCode(res) != diag.ToolUnknown {
		t.Fatalf("bob: %v %v, want TOOL_UNKNOWN", res, err)
	}
	if whoamiCalls.Load() != before {
		t.Error("the operation ran for a denied caller")
	}

	res, err = ts.Call(heddle.WithCaller(ctx, alice), "t_whoami", nil)
	if err != nil || res.IsError {
		t.Fatalf("alice: %v %v", res, err)
	}
	want := Identity{Subject: "alice", Roles: []string{"sre"}, Tenant: "acme"}
	got, ok := res.StructuredContent.(Identity)
	if !ok || got.Subject != want.Subject || got.Tenant != want.Tenant || len(got.Roles) != 1 {
		t.Errorf("structuredContent = %#v, want %#v", res.StructuredContent, want)
	}
	if txt := text(res); txt != `{"subject":"alice","roles":["sre"],"tenant":"acme"}` {
		t.Errorf("text = %s", txt)
	}
	// The key itself, and the qualified form, are accepted too.
	for _, name := range []string{"t.whoami", "usecase__t_whoami", "usecase.t.whoami"} {
		if res, err := ts.Call(heddle.WithCaller(ctx, alice), name, nil); err != nil || res.IsError {
			t.Errorf("%s: %v %v", name, res, err)
		}
	}
}

// TestArgumentsAreValidated: arguments are checked against the schema
// derived from the input type before the operation runs.
func TestArgumentsAreValidated(t *testing.T) {
	ts := openToolset(t, "ai: {}\n", `capabilities: [{kind: usecase, keys: [search]}]`, runtime.Options{})
	ctx := context.Background()
	res, err := ts.Call(ctx, "search", map[string]any{"query": "disk", "limit": 2})
	if err != nil || res.IsError || text(res) != `["usecase:disk"]` {
		t.Fatalf("search = %v %q %v", res, text(res), err)
	}
	if res.StructuredContent != nil {
		t.Errorf("a list result has structuredContent %v", res.StructuredContent)
	}
	for name, args := range map[string]map[string]any{
		"missing required": {},
		"unknown field":    {"query": "x", "user": "root"},
		"wrong type":       {"query": 3},
		"not an integer":   {"query": "x", "limit": 1.5},
		"wrong case":       {"Query": "x"},
	} {
		res, err := ts.Call(ctx, "search", args)
		if err != nil || runtime.RefusalCode(res) != diag.ToolArgsInvalid {
			t.Errorf("%s: %v %v, want TOOL_ARGS_INVALID", name, res, err)
		}
	}
}

// TestNamesClashAcrossKinds: a use case and an MCP tool both named search
// are qualified by the same rule as two servers' tools.
func TestNamesClashAcrossKinds(t *testing.T) {
	srv := testmcp.NewServer(&testmcp.Options{Tools: []string{"search"}, NoFixedTools: true})
	var (
		mu       sync.Mutex
		sessions []*mcp.ServerSession
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, ss := range sessions {
			_ = ss.Close()
		}
	})
	dial := func(string) mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(context.Background(), st, nil)
		if err != nil {
			t.Errorf("in-memory server: %v", err)
		}
		mu.Lock()
		sessions = append(sessions, ss)
		mu.Unlock()
		return ct
	}
	ts := openToolset(t, "ai:\n  mcp_servers:\n    srv: {url: http://127.0.0.1:1/mcp}\n",
		`capabilities: [{kind: mcp, server: srv}, {kind: usecase, keys: [search]}]`, runtime.Options{Kinds: testkinds.MCP(func(k *mcplive.Kind) { k.Dial = dial })})
	ctx := context.Background()
	tools, err := ts.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name+"/"+tl.Kind+"/"+tl.Server)
	}
	if got, want := strings.Join(names, " "), "srv__search/mcp/srv usecase__search/usecase/usecase"; got != want {
		t.Fatalf("tools = %s, want %s", got, want)
	}
	res, err := ts.Call(ctx, "usecase__search", map[string]any{"query": "q"})
	if err != nil || text(res) != `["usecase:q"]` {
		t.Errorf("usecase__search = %v %v", res, err)
	}
	res, err = ts.Call(ctx, "srv__search", map[string]any{"query": "q"})
	if err != nil || res.IsError || !strings.Contains(text(res), `"query":"q"`) {
		t.Errorf("srv__search = %v %q %v", res, text(res), err)
	}
	// The bare name is ambiguous now.
	if res, _ := ts.Call(ctx, "search", map[string]any{"query": "q"}); runtime.RefusalCode(res) != diag.ToolUnknown {
		t.Errorf("search = %v, want TOOL_UNKNOWN", res)
	}
}

// TestFailures: an operation's error, a coded error, a panic and a call past
// the supervisor's deadline.
func TestFailures(t *testing.T) {
	var logs syncbuf.Buffer
	ts := openToolset(t, "ai: {}\n", `
capabilities: [{kind: usecase, keys: [t.fail, t.refuse, t.panic, t.block]}]
policies: {tool_timeout_ms: 200}
`, runtime.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := heddle.WithCaller(context.Background(), alice)

	res, err := ts.Call(ctx, "t_fail", nil)
	if err != nil || !res.IsError || runtime.RefusalCode(res) != "" || text(res) != "the incident is locked by another change" {
		t.Errorf("t_fail = %v %q %v", res, text(res), err)
	}
	res, err = ts.Call(ctx, "t_refuse", nil)
	if err != nil || runtime.RefusalCode(res) != diag.ToolDenied || !strings.Contains(text(res), "closing incidents is frozen") {
		t.Errorf("t_refuse = %v %q %v", res, text(res), err)
	}
	res, err = ts.Call(ctx, "t_panic", nil)
	if err != nil || !res.IsError || text(res) != "use case t.panic failed with an internal error" {
		t.Errorf("t_panic = %v %q %v", res, text(res), err)
	}
	if l := logs.String(); !strings.Contains(l, "use case panicked") || !strings.Contains(l, "nil map in the incident store") {
		t.Errorf("the panic was not logged:\n%s", l)
	}
	start := time.Now()
	res, err = ts.Call(ctx, "t_block", nil)
	if !diag.Has(err, diag.ToolTimeout) {
		t.Errorf("t_block = %v %v, want TOOL_TIMEOUT", res, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("t_block took %v", d)
	}
}

// TestAnnotationsDrivePolicy: a destructive use case needs approval.
func TestAnnotationsDrivePolicy(t *testing.T) {
	ts := openToolset(t, "ai: {}\n", `capabilities: [{kind: usecase, keys: [t.destroy, t.whoami]}]`, runtime.Options{})
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string][2]bool{}
	for _, tl := range tools {
		flags[tl.Name] = [2]bool{tl.Destructive, tl.ReadOnly}
	}
	if flags["t_destroy"] != [2]bool{true, false} || flags["t_whoami"] != [2]bool{false, true} {
		t.Errorf("flags = %v", flags)
	}
	res, err := ts.Call(context.Background(), "t_destroy", nil)
	if err != nil || runtime.RefusalCode(res) != diag.ToolApprovalRequired {
		t.Errorf("t_destroy = %v %v, want TOOL_APPROVAL_REQUIRED", res, err)
	}
}

// TestUnregisteredKeyFailsOpen: a plan compiled by a build with more use
// cases than this one cannot open.
func TestUnregisteredKeyFailsOpen(t *testing.T) {
	p := &plan.Plan{
		Startup: plan.Startup{TimeoutMS: 1000, RemoteClients: "required"},
		Parts:   []plan.Part{mcpkind.PlanPart(mcpkind.Servers{})},
		Agents: map[string]*plan.Agent{"a": {Name: "a", Policies: plan.Policies{ToolTimeoutMS: 1000, Approval: "ask"},
			Grants: []plan.Grant{{Kind: "usecase", Spec: &usecasekind.Grant{Keys: []string{"t.whoami", "nobody.registered"}}}}}},
	}
	rt, err := runtime.Open(context.Background(), p, runtime.Options{})
	if err == nil {
		rt.Close()
		t.Fatal("Open succeeded")
	}
	if !diag.Has(err, diag.UsecaseUnknown) || !strings.Contains(err.Error(), "nobody.registered") {
		t.Errorf("err = %v, want USECASE_UNKNOWN naming the key", err)
	}
}
