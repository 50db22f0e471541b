package sqllive_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/sqlkind/sqllive"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// sqliteAPI is a deployment with one SQLite source; $DB is its file.
const sqliteAPI = `
ai:
  startup_timeout_ms: 5000
  sql_sources:
    warehouse:
      driver: sqlite
      path: $DB
      timeout_ms: 300
      max_rows: 5
      statements:
        open_incidents:
          description: Open incidents at or above a severity
          sql: SELECT id, title, severity FROM incidents WHERE status = 'open' AND severity >= :min_severity ORDER BY id
          params:
            min_severity: {type: integer, description: lowest severity to include}
        my_incidents:
          description: The caller's tenant's incidents
          sql: >-
            SELECT id, tenant FROM incidents
            WHERE tenant = :tenant AND severity >= coalesce(:min_severity, 1) AND status = 'open' ORDER BY id
          params:
            tenant: {type: string, from: caller.claims.tenant}
            min_severity: {type: integer, required: false}
        by_title:
          sql: "SELECT id FROM incidents WHERE title = :title -- not :this"
          params:
            title: {type: string}
        by_id:
          sql: SELECT id, title FROM incidents WHERE id = :id OR id = :id + 100
          params:
            id: {type: integer}
        all_incidents:
          sql: SELECT id FROM incidents ORDER BY id
        purge:
          sql: DELETE FROM incidents WHERE id = :id
          params:
            id: {type: integer}
        forever:
          sql: WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c
`

func openSQLite(t testing.TB, path string) *runtime.Toolset {
	t.Helper()
	rt := openRuntime(t, strings.ReplaceAll(sqliteAPI, "$DB", path),
		map[string]string{"analyst": `capabilities: [{kind: sql, source: warehouse, query: true}]`}, runtime.Options{})
	return toolset(t, rt, "analyst")
}

func TestSQLiteStatement(t *testing.T) {
	ts := openSQLite(t, buildWarehouse(t))
	ctx := context.Background()
	r := rows(t, ts, ctx, "open_incidents", map[string]any{"min_severity": 4})
	if diff := cmp.Diff(result{
		Columns: []string{"id", "title", "severity"},
		Rows: [][]any{
			{1.0, "Checkout API returns 502 for EU customers", 5.0},
			{2.0, "Disk full on db-replica-2", 4.0},
			{6.0, "Login failures after SSO rotation", 5.0},
			{12.0, "Kubernetes node NotReady in eu-west-1b", 4.0},
		},
	}, r); diff != "" {
		t.Errorf("open_incidents (-want +got):\n%s", diff)
	}
	res := call(t, ts, ctx, "open_incidents", map[string]any{"min_severity": 5})
	want := "id\ttitle\tseverity\n1\tCheckout API returns 502 for EU customers\t5\n6\tLogin failures after SSO rotation\t5\n(2 rows)"
	if got := text(res); got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	// A placeholder used twice binds twice; :this in a comment is no placeholder.
	if got := rows(t, ts, ctx, "by_id", map[string]any{"id": 3}).ids(); !slices.Equal(got, []int{3}) {
		t.Errorf("by_id = %v", got)
	}
	if got := rows(t, ts, ctx, "by_title", map[string]any{"title": "Disk full on db-replica-2"}).ids(); !slices.Equal(got, []int{2}) {
		t.Errorf("by_title = %v", got)
	}
}

func TestSQLiteToolDefinitions(t *testing.T) {
	ts := openSQLite(t, buildWarehouse(t))
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		if tl.Kind != "sql" || tl.Server != "warehouse" || !tl.ReadOnly || !tl.Idempotent || tl.Destructive {
			t.Errorf("%s: source %s server %s read-only %v idempotent %v destructive %v", tl.Name, tl.Kind, tl.Server, tl.ReadOnly, tl.Idempotent, tl.Destructive)
		}
		switch tl.Name {
		case "open_incidents":
			if diff := cmp.Diff(map[string]any{
				"type":                 "object",
				"properties":           map[string]any{"min_severity": map[string]any{"type": "integer", "description": "lowest severity to include"}},
				"required":             []string{"min_severity"},
				"additionalProperties": false,
			}, tl.InputSchema); diff != "" {
				t.Errorf("open_incidents schema (-want +got):\n%s", diff)
			}
			if tl.Description != "Open incidents at or above a severity" {
				t.Errorf("description = %q", tl.Description)
			}
		case "my_incidents":
			// The caller-bound tenant is not the model's to give.
			props := tl.InputSchema.(map[string]any)["properties"].(map[string]any)
			if _, ok := props["tenant"]; ok || props["min_severity"] == nil {
				t.Errorf("my_incidents properties = %v, want min_severity only", props)
			}
			if _, ok := tl.InputSchema.(map[string]any)["required"]; ok {
				t.Errorf("my_incidents requires %v, want nothing", tl.InputSchema.(map[string]any)["required"])
			}
		case "query":
			if !strings.Contains(tl.Description, "SQLite") {
				t.Errorf("query description = %q", tl.Description)
			}
		}
	}
	want := []string{"all_incidents", "by_id", "by_title", "forever", "my_incidents", "open_incidents", "purge", "query"}
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
}

func TestSQLiteParamsAreTyped(t *testing.T) {
	ts := openSQLite(t, buildWarehouse(t))
	for _, args := range []map[string]any{
		{"min_severity": "4"},
		{"min_severity": 4.5},
		{"min_severity": true},
		{},
		{"min_severity": 4, "extra": 1},
	} {
		res := call(t, ts, context.Background(), "open_incidents", args)
		if code := runtime.RefusalCode(res); code != diag.ToolArgsInvalid {
			t.Errorf("open_incidents(%v) = %q (%s), want TOOL_ARGS_INVALID", args, code, text(res))
		}
	}
}

func TestSQLiteInjectionIsInert(t *testing.T) {
	path := buildWarehouse(t)
	before := fileHash(t, path)
	ts := openSQLite(t, path)
	ctx := context.Background()
	for _, title := range []string{"'; DROP TABLE incidents; --", "x' OR '1'='1", `" OR 1=1 --`, "1 OR 1=1"} {
		if got := rows(t, ts, ctx, "by_title", map[string]any{"title": title}).ids(); len(got) != 0 {
			t.Errorf("by_title(%q) = %v, want no rows", title, got)
		}
	}
	// An integer parameter takes no text at all.
	for _, id := range []any{"1 OR 1=1", "1; DROP TABLE incidents"} {
		res := call(t, ts, ctx, "by_id", map[string]any{"id": id})
		if code := runtime.RefusalCode(res); code != diag.ToolArgsInvalid {
			t.Errorf("by_id(%q) = %q, want TOOL_ARGS_INVALID", id, code)
		}
	}
	if n := len(rows(t, ts, ctx, "query", map[string]any{"sql": "SELECT id FROM incidents LIMIT 5"}).Rows); n != 5 {
		t.Errorf("incidents after the attempts: %d rows, want 5 (the table is still there)", n)
	}
	if fileHash(t, path) != before {
		t.Error("the database file changed")
	}
}

func TestSQLiteQueryRefusesWrites(t *testing.T) {
	path := buildWarehouse(t)
	before := fileHash(t, path)
	ts := openSQLite(t, path)
	ctx := context.Background()
	other := filepath.Join(t.TempDir(), "other.db")
	for _, q := range []string{
		"INSERT INTO incidents (id, title, severity, status, tenant, opened_at) VALUES (99, 'x', 1, 'open', 'acme', 'now')",
		"UPDATE incidents SET status = 'resolved'",
		"DELETE FROM incidents",
		"CREATE TABLE notes (id INTEGER)",
		"CREATE TEMP TABLE notes (id INTEGER)",
		"CREATE VIEW v AS SELECT 1",
		"DROP TABLE incidents",
		"ALTER TABLE incidents ADD COLUMN x TEXT",
		"CREATE INDEX i ON incidents (title)",
		"ATTACH DATABASE '" + other + "' AS other",
		"ATTACH DATABASE ':memory:' AS scratch",
		"ATTACH DATABASE 'file:" + other + "?mode=rwc' AS other",
		"PRAGMA query_only = 0",
		"PRAGMA writable_schema = 1",
		"PRAGMA journal_mode = WAL",
		"PRAGMA user_version = 7",
		"BEGIN IMMEDIATE",
		"BEGIN",
		"SAVEPOINT s",
		"VACUUM",
		"VACUUM INTO '" + other + "'",
		"REINDEX incidents",
		"ANALYZE",
		"SELECT 1; DELETE FROM incidents",
		"WITH d AS (SELECT 1) DELETE FROM incidents",
		"SELECT load_extension('/nonexistent')",
		"REPLACE INTO incidents (id, title, severity, status, tenant, opened_at) VALUES (1, 'x', 1, 'open', 'acme', 'now')",
	} {
		res := call(t, ts, ctx, "query", map[string]any{"sql": q})
		if !res.IsError {
			t.Errorf("query(%q) succeeded: %s", q, text(res))
			continue
		}
		if msg := text(res); !strings.Contains(msg, "read-only") && !strings.Contains(msg, "not authorized") {
			t.Errorf("query(%q) = %q, want it to say the source is read-only", q, text(res))
		}
	}
	// A granted statement that writes fails the same way.
	if res := call(t, ts, ctx, "purge", map[string]any{"id": 1}); !res.IsError {
		t.Errorf("purge succeeded: %s", text(res))
	}
	// Reads still work on the same connections, and nothing changed.
	if got := rows(t, ts, ctx, "query", map[string]any{"sql": "SELECT count(*) FROM incidents"}).Rows; got[0][0] != 20.0 {
		t.Errorf("count = %v, want 20", got)
	}
	if got := rows(t, ts, ctx, "query", map[string]any{"sql": "PRAGMA query_only"}).Rows; got[0][0] != 1.0 {
		t.Errorf("query_only = %v, want 1", got)
	}
	if fileHash(t, path) != before {
		t.Error("the database file changed")
	}
	if _, err := os.Stat(other); err == nil {
		t.Error("ATTACH or VACUUM INTO created a file")
	}
}

func TestSQLiteIntrospectionIsAllowed(t *testing.T) {
	ts := openSQLite(t, buildWarehouse(t))
	for _, q := range []string{
		"PRAGMA table_info(incidents)",
		"SELECT name FROM pragma_table_info('incidents')",
		"SELECT name FROM sqlite_schema WHERE type = 'table'",
	} {
		if r := rows(t, ts, context.Background(), "query", map[string]any{"sql": q}); len(r.Rows) == 0 {
			t.Errorf("query(%q) returned no rows", q)
		}
	}
}

// TestSQLiteLayersBelowTheAuthorizer checks that mode=ro and query_only
// hold on their own, with the authorizer left out.
func TestSQLiteLayersBelowTheAuthorizer(t *testing.T) {
	path := buildWarehouse(t)
	before := fileHash(t, path)
	ctx := context.Background()
	e, err := sqllive.OpenSQLite(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, q := range []string{
		"DELETE FROM incidents",
		"CREATE TABLE notes (id INTEGER)",
	} {
		if _, _, err := e.Run(ctx, q); err == nil {
			t.Errorf("%q succeeded under query_only", q)
		}
	}
	// Turning query_only off leaves mode=ro.
	if _, _, err := e.Run(ctx, "PRAGMA query_only = 0"); err != nil {
		t.Fatalf("PRAGMA query_only = 0: %v", err)
	}
	_, _, err = e.Run(ctx, "DELETE FROM incidents")
	if err == nil {
		t.Error("DELETE succeeded on a file opened with mode=ro")
	} else if !strings.Contains(e.Explain(err), "read-only") {
		t.Errorf("DELETE: %q, want it to say read-only", e.Explain(err))
	}
	if fileHash(t, path) != before {
		t.Error("the database file changed")
	}
}

func TestSQLiteMaxRows(t *testing.T) {
	ts := openSQLite(t, buildWarehouse(t))
	ctx := context.Background()
	r := rows(t, ts, ctx, "all_incidents", nil)
	if !slices.Equal(r.ids(), []int{1, 2, 3, 4, 5}) || !r.Truncated {
		t.Errorf("all_incidents = %v truncated %v, want the first 5, truncated", r.ids(), r.Truncated)
	}
	res := call(t, ts, ctx, "query", map[string]any{"sql": "SELECT id FROM incidents ORDER BY id"})
	if !strings.HasSuffix(text(res), "(5 rows; truncated at max_rows 5: narrow the query)") {
		t.Errorf("text = %q", text(res))
	}
	// Exactly max_rows is not truncated.
	r = rows(t, ts, ctx, "query", map[string]any{"sql": "SELECT id FROM incidents ORDER BY id LIMIT 5"})
	if len(r.Rows) != 5 || r.Truncated {
		t.Errorf("LIMIT 5 = %d rows truncated %v", len(r.Rows), r.Truncated)
	}
	// A result far larger than the cap is cut without being read.
	start := time.Now()
	r = rows(t, ts, ctx, "query", map[string]any{"sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c"})
	if len(r.Rows) != 5 || !r.Truncated || time.Since(start) > time.Second {
		t.Errorf("unbounded query = %d rows truncated %v in %v", len(r.Rows), r.Truncated, time.Since(start))
	}
}

func TestSQLiteMaxBytes(t *testing.T) {
	path := buildWarehouse(t)
	rt := openRuntime(t, `
ai:
  sql_sources:
    warehouse:
      driver: sqlite
      path: `+path+`
      max_bytes: 200
`, map[string]string{"analyst": `capabilities: [{kind: sql, source: warehouse, query: true}]`}, runtime.Options{})
	ts := toolset(t, rt, "analyst")
	r := rows(t, ts, context.Background(), "query", map[string]any{"sql": "SELECT id, title FROM incidents ORDER BY id"})
	if len(r.Rows) == 0 || len(r.Rows) >= 20 || !r.Truncated {
		t.Fatalf("%d rows truncated %v, want a few, truncated", len(r.Rows), r.Truncated)
	}
	res := call(t, ts, context.Background(), "query", map[string]any{"sql": "SELECT id, title FROM incidents ORDER BY id"})
	if !strings.Contains(text(res), "truncated at max_bytes 200") {
		t.Errorf("text = %q", text(res))
	}
}

func TestSQLiteClaimBoundParam(t *testing.T) {
	ts := openSQLite(t, buildWarehouse(t))
	for tenant, want := range map[string][]int{
		"globex":  {6, 7, 8},
		"initech": {12, 13, 15, 17},
		"nobody":  {},
	} {
		if got := rows(t, ts, asCaller(tenant), "my_incidents", nil).ids(); !slices.Equal(got, want) {
			t.Errorf("my_incidents as %s = %v, want %v", tenant, got, want)
		}
	}
	if got := rows(t, ts, asCaller("initech"), "my_incidents", map[string]any{"min_severity": 3}).ids(); !slices.Equal(got, []int{12, 13, 15}) {
		t.Errorf("my_incidents(min_severity 3) as initech = %v", got)
	}
	// The model cannot choose the tenant: the parameter is not in the
	// schema, and an extra argument is refused, not ignored.
	res := call(t, ts, asCaller("globex"), "my_incidents", map[string]any{"tenant": "acme"})
	if code := runtime.RefusalCode(res); code != diag.ToolArgsInvalid {
		t.Errorf("my_incidents(tenant: acme) = %q (%s), want TOOL_ARGS_INVALID", code, text(res))
	}
	// A caller without the claim gets a refusal, never a wider query.
	for _, ctx := range []context.Context{asCaller(""), context.Background()} {
		res := call(t, ts, ctx, "my_incidents", nil)
		if code := runtime.RefusalCode(res); code != diag.SQLParamUnbound {
			t.Errorf("my_incidents without a tenant = %q (%s), want SQL_PARAM_UNBOUND", code, text(res))
		}
	}
}

func TestSQLiteTimeout(t *testing.T) {
	ts := openSQLite(t, buildWarehouse(t))
	start := time.Now()
	res := call(t, ts, context.Background(), "forever", nil)
	if code := runtime.RefusalCode(res); code != diag.TransportTimeout {
		t.Errorf("forever = %q (%s), want TRANSPORT_TIMEOUT", code, text(res))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("forever took %v with timeout_ms 300", d)
	}
	// The connection is fine afterwards.
	if got := rows(t, ts, context.Background(), "by_id", map[string]any{"id": 1}).ids(); !slices.Equal(got, []int{1}) {
		t.Errorf("by_id after a timeout = %v", got)
	}
}

func TestSQLiteMissingFileFailsStartup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.db")
	for _, remote := range []string{"required", "optional"} {
		p := compilePlan(t, strings.ReplaceAll(sqliteAPI, "$DB", path)+"  remote_clients: "+remote+"\n",
			map[string]string{"analyst": `capabilities: [{kind: sql, source: warehouse}]`})
		rt, err := runtime.Open(context.Background(), p, runtime.Options{})
		if err == nil {
			rt.Close()
			t.Fatalf("remote_clients %s: Open succeeded with a missing SQLite file", remote)
		}
		var se *runtime.StartupError
		if !diag.Has(err, diag.SQLSourceUnreachable) || !errors.As(err, &se) || se.Failures[0].Name != "warehouse" {
			t.Errorf("remote_clients %s: err = %v, want SQL_SOURCE_UNREACHABLE naming warehouse", remote, err)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatal("opening created the file")
		}
	}
	// Not a database at all.
	if err := os.WriteFile(path, []byte("not a database, just text that is long enough to be read as a header"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := runtime.Open(context.Background(), compilePlan(t, strings.ReplaceAll(sqliteAPI, "$DB", path),
		map[string]string{"analyst": `capabilities: [{kind: sql, source: warehouse}]`}), runtime.Options{})
	if !diag.Has(err, diag.SQLSourceUnreachable) {
		t.Errorf("a text file: err = %v, want SQL_SOURCE_UNREACHABLE", err)
	}
}

func TestSQLiteHealth(t *testing.T) {
	path := buildWarehouse(t)
	rt := openRuntime(t, strings.ReplaceAll(sqliteAPI, "$DB", path),
		map[string]string{"analyst": `capabilities: [{kind: sql, source: warehouse, statements: [open_incidents]}]`}, runtime.Options{})
	rep := rt.Health()
	if !rep.Ready || len(rep.Dependencies) != 1 {
		t.Fatalf("health = %+v", rep)
	}
	d := rep.Dependencies[0]
	if d.Name != "warehouse" || d.Kind != "sql" || d.State != driver.StateReady || !d.Required || d.Tools != 1 || d.ListedAt == nil ||
		d.Since == nil || d.Since.After(time.Now()) || !slices.Equal(d.Agents, []string{"analyst"}) {
		t.Errorf("dependency = %+v", d)
	}
}

// TestSQLiteGrantsMerge: two grants of one source in one agent give the
// union of their tools, once.
func TestSQLiteGrantsMerge(t *testing.T) {
	rt := openRuntime(t, strings.ReplaceAll(sqliteAPI, "$DB", buildWarehouse(t)),
		map[string]string{"analyst": `capabilities:
  - {kind: sql, source: warehouse, statements: [open_incidents]}
  - {kind: sql, source: warehouse, statements: [by_id, open_incidents], query: true}
`}, runtime.Options{})
	tools, err := toolset(t, rt, "analyst").Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if want := []string{"by_id", "open_incidents", "query"}; !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
}

// TestSQLiteStatementNamedQuery: a statement named query cannot sit next
// to the free-form query tool of the same grant.
func TestSQLiteStatementNamedQuery(t *testing.T) {
	p := compilePlan(t, `
ai:
  sql_sources:
    warehouse:
      driver: sqlite
      path: `+buildWarehouse(t)+`
      statements:
        query: {sql: SELECT 1}
`, map[string]string{"analyst": `capabilities: [{kind: sql, source: warehouse, query: true}]`})
	rt, err := runtime.Open(context.Background(), p, runtime.Options{})
	if err == nil {
		rt.Close()
	}
	if !diag.Has(err, diag.ToolNameConflict) {
		t.Errorf("err = %v, want TOOL_NAME_CONFLICT", err)
	}
}

// TestSQLiteGrantsMergeDefer: the united source of two grants of one
// source is deferred only when both grants say defer.
func TestSQLiteGrantsMergeDefer(t *testing.T) {
	db := buildWarehouse(t)
	for _, c := range []struct {
		first, second bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		rt := openRuntime(t, strings.ReplaceAll(sqliteAPI, "$DB", db),
			map[string]string{"analyst": fmt.Sprintf(`capabilities:
  - {kind: sql, source: warehouse, statements: [open_incidents], defer: %v}
  - {kind: sql, source: warehouse, statements: [by_id], defer: %v}
`, c.first, c.second)}, runtime.Options{})
		tools, err := toolset(t, rt, "analyst").Tools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(tools) != 2 {
			t.Fatalf("tools = %+v, want by_id and open_incidents", tools)
		}
		for _, tl := range tools {
			if want := c.first && c.second; tl.Deferred != want {
				t.Errorf("defer %v and %v: %s deferred %v, want %v", c.first, c.second, tl.Name, tl.Deferred, want)
			}
		}
	}
}
