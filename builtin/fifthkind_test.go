package builtin_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/internal/modtest"
)

// TestAFifthKind builds a worker with a capability kind of its own — ticket,
// with its own ai.ticket_queues section, its own plan part, a live half with
// one tool and its own diagnostic code in the catalogue — in a module of its
// own that imports heddle's public packages and touches none of heddle's
// files (testdata/ticketworker), then drives it as an operator would: check,
// plan, tools, call, health.
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
	dir := modtest.Build(t, "example.com/ticketworker", "ticketworker", files)
	run := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(filepath.Join(dir, "ticketworker"), args...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%v: %v", args, err)
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
	for _, want := range []string{"CONFIG_PARSE", "MCP_SERVER_UNKNOWN", "TICKET_QUEUE_UNKNOWN"} {
		if !slices.Contains(codes, want) {
			t.Errorf("codes: %s is not catalogued", want)
		}
	}

	// The kind's part of the plan, with its default applied once.
	out, code = run("plan")
	var p struct {
		TicketQueues map[string]struct {
			Prefix    string   `json:"prefix"`
			MaxOpen   int      `json:"max_open"`
			GrantedTo []string `json:"granted_to"`
		} `json:"ticket_queues"`
	}
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil {
		t.Fatalf("plan: exit %d, %v\n%s", code, err, out)
	}
	if q := p.TicketQueues["ops"]; q.Prefix != "OPS" || q.MaxOpen != 2 || !slices.Equal(q.GrantedTo, []string{"desk"}) {
		t.Errorf("plan: ticket_queues.ops = %+v", q)
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
	// The toolset checks the kind's input schema before the call.
	if out, code := run("call", "desk", "open_ticket", "--args", `{}`, "--format", "json"); code != 1 || !strings.Contains(out, "TOOL_ARGS_INVALID") {
		t.Errorf("call without a title: exit %d, %s", code, out)
	}

	out, code = run("health", "--format", "json")
	if code != 0 || !strings.Contains(out, `"kind": "ticket"`) || !strings.Contains(out, `"name": "ops"`) {
		t.Errorf("health: exit %d\n%s", code, out)
	}
}
