package integration

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
)

// Two instances of server-everything (ev1, ev2) and a server-filesystem in
// one agent: every name the two instances share becomes ev1__name and
// ev2__name, the filesystem's names stay bare, and every accepted form of a
// name reaches the right server (DESIGN, runtime semantics 6).
func TestNameClash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	api := "ai:\n  startup_timeout_ms: 30000\n  mcp_servers:" +
		everythingServer(t, "ev1", "stdio") +
		everythingServer(t, "ev2", "stdio") +
		filesystemServer(t, "fs", dir)
	h := open(t, api, map[string]string{
		"both": `capabilities: [{kind: mcp, server: ev1}, {kind: mcp, server: ev2}, {kind: mcp, server: fs}]`,
		"one":  `capabilities: [{kind: mcp, server: ev1}]`,
	})
	ts := h.toolset(t, "both")

	var want []string
	for _, n := range everythingTools {
		want = append(want, "ev1__"+n, "ev2__"+n)
	}
	want = append(want, filesystemTools...)
	slices.Sort(want)
	if diff := cmp.Diff(want, toolNames(t, ts)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	tl := toolByName(t, ts, "ev2__get-sum")
	if tl.Server != "ev2" || tl.OriginalName != "get-sum" {
		t.Errorf("ev2__get-sum: server %q original %q", tl.Server, tl.OriginalName)
	}

	// Another agent granted one instance keeps the bare names.
	if diff := cmp.Diff(everythingTools, toolNames(t, h.toolset(t, "one"))); diff != "" {
		t.Errorf("agent one (-want +got):\n%s", diff)
	}

	// Which server answers: each instance declares EVERYTHING_NAME.
	for name, server := range map[string]string{
		"ev1__get-env": "ev1", "ev2__get-env": "ev2", // qualified (the primary names)
		"ev1.get-env": "ev1", "ev2.get-env": "ev2", // legacy dotted
	} {
		res := call(t, ts, name, nil)
		var env map[string]string
		if err := json.Unmarshal([]byte(text(res)), &env); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if env["EVERYTHING_NAME"] != server {
			t.Errorf("%s answered by %q, want %s", name, env["EVERYTHING_NAME"], server)
		}
	}
	// The bare name of a shared tool is ambiguous: the model is told so.
	if res := callRaw(t, ts, "get-env", nil); runtime.RefusalCode(res) != diag.ToolUnknown {
		t.Errorf("bare get-env: code %q, want TOOL_UNKNOWN: %s", runtime.RefusalCode(res), text(res))
	}
	// A unique name works bare, qualified and dotted.
	for _, name := range []string{"list_allowed_directories", "fs__list_allowed_directories", "fs.list_allowed_directories"} {
		call(t, ts, name, nil)
	}
	// One process per server, shared by both agents.
	if ps := h.processes(); len(ps) != 3 {
		t.Errorf("%d server processes (%v), want 3", len(ps), ps)
	}
}
