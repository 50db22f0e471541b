package builtin_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlehq/heddle/examples/auth-agent-session/sessiontest"
	"github.com/heddlehq/heddle/internal/modtest"
)

// The bootstrap secret of the worker's queue at the session endpoint.
const (
	bootstrap  = "bootstrap-CANARY-0c9e4b7a2d15f863"
	secretPath = "/agents/desk"
)

// TestAFifthKind builds a worker with a capability kind of its own — ticket,
// with its own ai.ticket_queues section, its own plan part, a live half
// whose queues are an HTTP service reached through an auth plugin, its tools
// pinned in heddle.lock, and codes of its own in the catalogue — in a module
// of its own that imports heddle's public packages and touches none of
// heddle's files (testdata/ticketworker), then drives it as an operator
// would: check, plan, tools, call, health, lock.
func TestAFifthKind(t *testing.T) {
	files := map[string]string{}
	root := filepath.Join("testdata", "ticketworker")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		files[rel] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The configuration names the plugin binary and the servers, which
	// are known once they are built and started.
	api := files[filepath.Join("config", "api.yaml")]
	delete(files, filepath.Join("config", "api.yaml"))

	plugin := buildPlugin(t)
	dir := modtest.Build(t, "example.com/ticketworker", "ticketworker", files)
	pluginBin, pluginSum := plugin()

	svc := &ticketService{description: "Open a ticket in the queue; returns its id."}
	srv := sessiontest.Start(sessiontest.Options{
		TTL:      time.Minute,
		Secrets:  map[string]string{secretPath: bootstrap},
		Resource: svc.handler(),
	})
	t.Cleanup(srv.Close)
	modtest.WriteFile(t, filepath.Join(dir, "config", "api.yaml"), strings.NewReplacer(
		"@PLUGIN@", pluginBin, "@PLUGIN_SHA256@", pluginSum,
		"@TICKETS_URL@", srv.URL, "@SESSION_URL@", srv.SessionURL(),
	).Replace(api))

	secret := bootstrap
	run := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(filepath.Join(dir, "ticketworker"), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TICKET_BOOTSTRAP="+secret)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%v: %v", args, err)
		}
		if strings.Contains(out.String(), bootstrap) {
			t.Errorf("%v shows the bootstrap secret:\n%s", args, out.String())
		}
		return out.String(), cmd.ProcessState.ExitCode()
	}

	if out, code := run("check"); code != 0 || !strings.HasPrefix(out, "ok: 1 agent,") {
		t.Fatalf("check: exit %d\n%s", code, out)
	}

	// The kind's own section is decoded strictly and located; its own code
	// reaches the operator with the file and line of the grant.
	out, code := run("check", "--config", "broken/config/api.yaml", "--agents", "broken/agents", "--format", "json")
	if code != 1 {
		t.Fatalf("check of the broken configuration: exit %d, want 1\n%s", code, out)
	}
	var report struct {
		Diagnostics []struct {
			Code, File, Path string
			Line             int
		}
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("check --format json: %v\n%s", err, out)
	}
	type located struct {
		code, file, path string
		line             int
	}
	var got []located
	for _, d := range report.Diagnostics {
		got = append(got, located{d.Code, d.File, d.Path, d.Line})
	}
	for _, want := range []located{
		{"CONFIG_KEY_UNKNOWN", "broken/config/api.yaml", "ai.ticket_queues.ops.colour", 5},
		{"TICKET_QUEUE_UNKNOWN", "broken/agents/desk/agent.yaml", "capabilities[0].queue", 2},
	} {
		if !slices.Contains(got, want) {
			t.Errorf("check: no diagnostic %+v; got %+v", want, got)
		}
	}

	// The worker's catalogue is the built-in set's and the kind's own codes.
	out, code = run("codes")
	var catalogue []struct{ Code, Phase, Meaning, Fix string }
	if err := json.Unmarshal([]byte(out), &catalogue); code != 0 || err != nil {
		t.Fatalf("codes: exit %d, %v\n%s", code, err, out)
	}
	var codes []string
	for _, e := range catalogue {
		codes = append(codes, e.Code)
		if e.Meaning == "" || e.Fix == "" {
			t.Errorf("codes: %s has no meaning or fix", e.Code)
		}
	}
	for _, want := range []string{"CONFIG_PARSE", "MCP_SERVER_UNKNOWN", "TICKET_QUEUE_UNKNOWN", "TICKET_QUEUE_UNREACHABLE"} {
		if !slices.Contains(codes, want) {
			t.Errorf("codes: %s is not catalogued", want)
		}
	}

	// The kind's part of the plan, with its default applied once and the
	// queue's credentials as a reference.
	out, code = run("plan")
	var p struct {
		TicketQueues map[string]struct {
			Prefix    string   `json:"prefix"`
			MaxOpen   int      `json:"max_open"`
			GrantedTo []string `json:"granted_to"`
			Auth      struct {
				Kind   string `json:"kind"`
				Plugin bool   `json:"plugin"`
			} `json:"auth"`
		} `json:"ticket_queues"`
	}
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil {
		t.Fatalf("plan: exit %d, %v\n%s", code, err, out)
	}
	if q := p.TicketQueues["ops"]; q.Prefix != "OPS" || q.MaxOpen != 2 || !slices.Equal(q.GrantedTo, []string{"desk"}) || q.Auth.Kind != "agent-session" || !q.Auth.Plugin {
		t.Errorf("plan: ticket_queues.ops = %+v", q)
	}

	// Without the right credentials the queue refuses the worker, and the
	// call fails with a code: the plugin's bootstrap secret refused at the
	// session endpoint, or no auth block at all.
	secret = "not-the-bootstrap-secret"
	if out, code := run("call", "desk", "open_ticket", "--args", `{"title":"printer on fire"}`); code != 1 || !strings.Contains(out, "MCP_AUTH_STRATEGY_INVALID") {
		t.Errorf("call with a wrong bootstrap secret: exit %d, want 1 and MCP_AUTH_STRATEGY_INVALID\n%s", code, out)
	}
	secret = bootstrap
	if out, code := run("call", "desk", "open_ticket", "--env", "noauth", "--args", `{"title":"printer on fire"}`); code != 1 || !strings.Contains(out, "TICKET_QUEUE_UNREACHABLE") {
		t.Errorf("call without credentials: exit %d, want 1 and TICKET_QUEUE_UNREACHABLE\n%s", code, out)
	}
	if n := svc.opened(); n != 0 {
		t.Errorf("%d tickets opened without credentials", n)
	}

	out, code = run("tools", "desk", "--format", "json")
	var tools []struct{ Name, Source, Server string }
	if err := json.Unmarshal([]byte(out), &tools); code != 0 || err != nil {
		t.Fatalf("tools: exit %d, %v\n%s", code, err, out)
	}
	if len(tools) != 1 || tools[0].Name != "open_ticket" || tools[0].Source != "ticket" || tools[0].Server != "ops" {
		t.Errorf("tools = %+v, want open_ticket from ticket queue ops", tools)
	}

	if out, code := run("call", "desk", "open_ticket", "--args", `{"title":"printer on fire"}`); code != 0 || strings.TrimSpace(out) != "OPS-1: printer on fire" {
		t.Errorf("call: exit %d, %q", code, out)
	}
	if srv.Mints() == 0 || srv.Accepted() == 0 {
		t.Errorf("the plugin minted %d tokens and the service accepted %d requests", srv.Mints(), srv.Accepted())
	}
	// The toolset checks the kind's input schema before the call.
	if out, code := run("call", "desk", "open_ticket", "--args", `{}`, "--format", "json"); code != 1 || !strings.Contains(out, "TOOL_ARGS_INVALID") {
		t.Errorf("call without a title: exit %d, %s", code, out)
	}

	out, code = run("health", "--format", "json")
	if code != 0 || !strings.Contains(out, `"kind": "ticket"`) || !strings.Contains(out, `"name": "ops"`) {
		t.Errorf("health: exit %d\n%s", code, out)
	}

	// heddle lock pins the kind's tools under its own name; a changed
	// definition is drift for lock --check, and the kind refuses to start
	// against the lock.
	if out, code := run("lock"); code != 0 {
		t.Fatalf("lock: exit %d\n%s", code, out)
	}
	var lock struct {
		Version int
		Kinds   map[string]map[string]struct {
			Tools map[string]struct{ SHA256 string }
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "heddle.lock"))
	if err == nil {
		err = json.Unmarshal(b, &lock)
	}
	if err != nil {
		t.Fatalf("heddle.lock: %v", err)
	}
	if lock.Version != 3 || len(lock.Kinds["ticket"]["ops"].Tools["open_ticket"].SHA256) != 64 {
		t.Errorf("heddle.lock does not pin the ticket kind's tool:\n%s", b)
	}
	if out, code := run("lock", "--check"); code != 0 {
		t.Errorf("lock --check of a fresh lock: exit %d\n%s", code, out)
	}
	svc.setDescription("Open a ticket in the queue, and page whoever is on call.")
	out, code = run("lock", "--check", "--format", "json")
	var check struct {
		OK    bool
		Drift []struct {
			Kind, Server, Tool, Change string
			Fields                     []string
		}
	}
	if err := json.Unmarshal([]byte(out), &check); code != 1 || err != nil {
		t.Fatalf("lock --check after a change: exit %d, %v\n%s", code, err, out)
	}
	if len(check.Drift) != 1 || check.Drift[0].Kind != "ticket" || check.Drift[0].Server != "ops" || check.Drift[0].Tool != "open_ticket" ||
		check.Drift[0].Change != "changed" || !slices.Equal(check.Drift[0].Fields, []string{"description"}) {
		t.Errorf("lock --check: drift %+v", check.Drift)
	}
	if out, code := run("tools", "desk"); code != 1 || !strings.Contains(out, "TOOL_DEFINITION_CHANGED") {
		t.Errorf("tools against a lock the queue no longer matches: exit %d, want 1 and TOOL_DEFINITION_CHANGED\n%s", code, out)
	}
}

// buildPlugin starts building the example auth plugin, while the worker
// is built, and returns a function that waits for it and returns the
// binary and its SHA-256. Without a go command modtest.Build skips the test
// (or fails it, under CI=true) before that function is called.
func buildPlugin(t *testing.T) func() (bin, sum string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a program of its own module; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "heddle-auth-agent-session")
	var (
		out  []byte
		err  error
		done sync.WaitGroup
	)
	goBin, lookErr := exec.LookPath("go")
	done.Go(func() {
		if err = lookErr; err == nil {
			build := exec.CommandContext(t.Context(), goBin, "build", "-o", bin, "github.com/heddlehq/heddle/examples/auth-agent-session")
			out, err = build.CombinedOutput()
		}
	})
	t.Cleanup(done.Wait)
	return func() (string, string) {
		t.Helper()
		done.Wait()
		if err != nil {
			t.Fatalf("building the example auth plugin: %v\n%s", err, out)
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		return bin, hex.EncodeToString(sum[:])
	}
}

// ticketService is the queues' HTTP endpoint, served behind the session
// endpoint's token check: GET /queues/{queue}/tools lists the queue's
// tools, POST /queues/{queue}/tickets opens a ticket and answers its
// number. Its methods are safe for concurrent use.
type ticketService struct {
	mu          sync.Mutex
	description string
	numbers     map[string]int
}

func (s *ticketService) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /queues/{queue}/tools", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		desc := s.description
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode([]map[string]any{{
			"name":        "open_ticket",
			"description": desc,
			"inputSchema": map[string]any{
				"type":                 "object",
				"properties":           map[string]any{"title": map[string]any{"type": "string"}},
				"required":             []string{"title"},
				"additionalProperties": false,
			},
			"annotations": map[string]any{"destructiveHint": false},
		}})
	})
	mux.HandleFunc("POST /queues/{queue}/tickets", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Title string }
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&in); err != nil || in.Title == "" {
			http.Error(w, "a ticket needs a title", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		if s.numbers == nil {
			s.numbers = map[string]int{}
		}
		s.numbers[r.PathValue("queue")]++
		n := s.numbers[r.PathValue("queue")]
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]int{"number": n})
	})
	return mux
}

func (s *ticketService) setDescription(d string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.description = d
}

// opened is how many tickets the service opened.
func (s *ticketService) opened() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.numbers {
		n += c
	}
	return n
}
