package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// connect serves srv in memory and returns a client session.
func connect(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// tools lists the session's tools, keyed by name.
func tools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	m := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		m[tool.Name] = tool
	}
	return m
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func TestRunbooks(t *testing.T) {
	t.Setenv("RUNBOOKS_REGION", "eu-west-1")
	srv, err := newServer("runbooks", nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, srv)

	ts := tools(t, cs)
	for name, destructive := range map[string]bool{"search_runbooks": false, "get_runbook": false, "execute_runbook": true} {
		tool := ts[name]
		if tool == nil {
			t.Fatalf("no tool %s", name)
		}
		gotDestructive := tool.Annotations.DestructiveHint != nil && *tool.Annotations.DestructiveHint
		if gotDestructive != destructive || tool.Annotations.ReadOnlyHint == destructive {
			t.Errorf("%s: annotations %+v, want destructive=%v", name, tool.Annotations, destructive)
		}
	}

	if got, _ := callText(t, cs, "search_runbooks", map[string]any{"query": "database timeouts"}); !strings.HasPrefix(got, "RB-102 ") || strings.Contains(got, "\n") {
		t.Errorf("search database timeouts: %q, want RB-102 only", got)
	}
	if got, isErr := callText(t, cs, "get_runbook", map[string]any{"id": "rb-104"}); isErr || !strings.Contains(got, "1. Confirm the expiry") {
		t.Errorf("get_runbook rb-104: %q", got)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute_runbook", Arguments: map[string]any{"id": "RB-101"}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := res.StructuredContent.(map[string]any)
	if id, _ := got["execution_id"].(string); !strings.HasPrefix(id, "EX-") {
		t.Errorf("execute_runbook: execution_id %q", id)
	}
	delete(got, "execution_id")
	want := map[string]any{"runbook_id": "RB-101", "status": "started", "region": "eu-west-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("execute_runbook (-want +got):\n%s", diff)
	}
	if _, isErr := callText(t, cs, "get_runbook", map[string]any{"id": "RB-999"}); !isErr {
		t.Error("get_runbook RB-999: want a tool error")
	}
}

func TestCatalog(t *testing.T) {
	srv, err := newServer("catalog", []string{"search_products", "get_product"})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, srv)
	ts := tools(t, cs)
	if len(ts) != 2 {
		t.Fatalf("got %d tools, want 2", len(ts))
	}
	for name, tool := range ts {
		if !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s is not annotated read-only", name)
		}
	}
	if got, _ := callText(t, cs, "search_products", map[string]any{"query": "Managed"}); !strings.HasPrefix(got, "P-200 Managed PostgreSQL") {
		t.Errorf("search managed: %q", got)
	}
	if got, isErr := callText(t, cs, "get_product", map[string]any{"id": "P-300"}); isErr || !strings.Contains(got, "Object Storage") {
		t.Errorf("get_product P-300: %q", got)
	}
}

func TestToolsFilter(t *testing.T) {
	srv, err := newServer("runbooks", []string{"search_runbooks"})
	if err != nil {
		t.Fatal(err)
	}
	if ts := tools(t, connect(t, srv)); len(ts) != 1 || ts["search_runbooks"] == nil {
		t.Errorf("filtered tools: %v", ts)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--name", "nope"},
		{"--name", "catalog", "--tools", "search_runbooks"},
		{"--name", "runbooks", "--transport", "carrier-pigeon"},
		{"--name", "runbooks", "extra"},
		{"--no-such-flag"},
	} {
		if got := run(args, io.Discard, io.Discard); got != 2 {
			t.Errorf("run(%q) = %d, want 2", args, got)
		}
	}
}
