package sqllive_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/sqlkind/sqllive"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/secrets"
)

// pgAPI is a deployment with one PostgreSQL source whose DSN is the secret
// ${env:PG_DSN}; $REMOTE is ai.remote_clients.
const pgAPI = `
ai:
  startup_timeout_ms: 5000
  remote_clients: $REMOTE
  sql_sources:
    pg:
      driver: postgres
      dsn_ref: ${env:PG_DSN}
      timeout_ms: 500
      max_rows: 100
      statements:
        open_incidents:
          sql: SELECT id, title, severity FROM incidents WHERE status = 'open' AND severity >= :min_severity ORDER BY id
          params:
            min_severity: {type: integer}
        my_incidents:
          sql: >-
            SELECT id FROM incidents WHERE tenant = :tenant::text AND status = 'open'
            AND title <> ':not_a_param' ORDER BY id
          params:
            tenant: {type: string, from: caller.claims.tenant}
        by_title:
          sql: SELECT id FROM incidents WHERE title = :title OR tenant = :title
          params:
            title: {type: string}
        by_id:
          sql: SELECT id FROM incidents WHERE id = :id
          params:
            id: {type: integer}
        purge:
          sql: DELETE FROM incidents WHERE id = :id
          params:
            id: {type: integer}
        sneaky_purge:
          sql: WITH d AS (DELETE FROM incidents WHERE id = :id RETURNING id) SELECT id FROM d
          params:
            id: {type: integer}
        sleepy:
          sql: SELECT pg_sleep(5)
`

// dsnResolver resolves every reference to dsn.
func dsnResolver(dsn string) secrets.Resolver {
	return secrets.Func(func(context.Context, config.Ref) (secrets.Value, error) { return secrets.NewValue(dsn), nil })
}

func openPG(t *testing.T, dsn, remote string) (*runtime.Runtime, error) {
	t.Helper()
	p := compilePlan(t, strings.ReplaceAll(pgAPI, "$REMOTE", remote),
		map[string]string{"analyst": `capabilities: [{kind: sql, source: pg, query: true}]`})
	rt, err := runtime.Open(context.Background(), p, runtime.Options{Secrets: dsnResolver(dsn)})
	if err == nil {
		t.Cleanup(func() { _ = rt.Close() })
	}
	return rt, err
}

// pgRoles sets up the roles of the tests: one that may only read, and one
// for each way a role could write.
const pgRoles = `
CREATE ROLE heddle_reader LOGIN;
GRANT SELECT ON incidents TO heddle_reader;

CREATE ROLE heddle_owner LOGIN;
CREATE TABLE owner_notes (id integer);
ALTER TABLE owner_notes OWNER TO heddle_owner;
CREATE ROLE heddle_inserter LOGIN;
GRANT SELECT, INSERT ON incidents TO heddle_inserter;
CREATE ROLE heddle_column LOGIN;
GRANT SELECT, UPDATE (title) ON incidents TO heddle_column;
CREATE ROLE heddle_truncate LOGIN;
GRANT TRUNCATE ON incidents TO heddle_truncate;
CREATE ROLE heddle_trigger LOGIN;
GRANT TRIGGER ON incidents TO heddle_trigger;
CREATE ROLE heddle_schema LOGIN;
GRANT CREATE ON SCHEMA public TO heddle_schema;
CREATE ROLE heddle_database LOGIN;
GRANT CREATE ON DATABASE warehouse TO heddle_database;
CREATE ROLE heddle_member LOGIN NOINHERIT;
GRANT heddle_inserter TO heddle_member;
CREATE ROLE heddle_createrole LOGIN CREATEROLE;
CREATE ROLE heddle_alldata LOGIN;
GRANT pg_write_all_data TO heddle_alldata;
CREATE ROLE heddle_program LOGIN;
GRANT pg_execute_server_program TO heddle_program;
CREATE SEQUENCE tickets;
CREATE ROLE heddle_sequence LOGIN;
GRANT UPDATE ON SEQUENCE tickets TO heddle_sequence;
`

// TestPostgres runs against a real, throwaway PostgreSQL cluster.
func TestPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	srv := startPostgres(t)
	srv.exec(t, "postgres", "CREATE DATABASE warehouse")
	srv.exec(t, "warehouse", warehouseSQL(t), pgRoles)
	reader := srv.dsn("heddle_reader", "warehouse")

	rt, err := openPG(t, reader, "required")
	if err != nil {
		t.Fatalf("a role with only SELECT: %v", err)
	}
	ts := toolset(t, rt, "analyst")
	ctx := context.Background()

	t.Run("statements", func(t *testing.T) {
		r := rows(t, ts, ctx, "open_incidents", map[string]any{"min_severity": 4})
		if !slices.Equal(r.Columns, []string{"id", "title", "severity"}) || !slices.Equal(r.ids(), []int{1, 2, 6, 12}) || r.Truncated {
			t.Errorf("open_incidents = %+v", r)
		}
		if got := rows(t, ts, asCaller("initech"), "my_incidents", nil).ids(); !slices.Equal(got, []int{12, 13, 15, 17}) {
			t.Errorf("my_incidents as initech = %v", got)
		}
		if code := runtime.RefusalCode(call(t, ts, asCaller(""), "my_incidents", nil)); code != diag.SQLParamUnbound {
			t.Errorf("my_incidents without a tenant = %q, want SQL_PARAM_UNBOUND", code)
		}
		// Statements the cursor cannot run go directly.
		r = rows(t, ts, ctx, "query", map[string]any{"sql": "SHOW default_transaction_read_only"})
		if len(r.Rows) != 1 || r.Rows[0][0] != "on" {
			t.Errorf("SHOW default_transaction_read_only = %v", r.Rows)
		}
		r = rows(t, ts, ctx, "query", map[string]any{"sql": "/* c */ (SELECT now()::date AS d, 1.5::numeric AS n, '{\"a\": 1}'::jsonb AS j, NULL AS z)"})
		if len(r.Rows) != 1 || r.Rows[0][1] != "1.5" || fmt.Sprint(r.Rows[0][2]) != "map[a:1]" || r.Rows[0][3] != nil {
			t.Errorf("types = %v", r.Rows)
		}
		if res := call(t, ts, ctx, "query", map[string]any{"sql": "EXPLAIN SELECT * FROM incidents"}); res.IsError {
			t.Errorf("EXPLAIN: %s", text(res))
		}
	})

	t.Run("writes fail", func(t *testing.T) {
		for _, q := range []string{
			"INSERT INTO incidents (id, title, severity, status, tenant, opened_at) VALUES (99, 'x', 1, 'open', 'acme', 'now')",
			"UPDATE incidents SET status = 'resolved'",
			"DELETE FROM incidents",
			"TRUNCATE incidents",
			"CREATE TABLE notes (id integer)",
			"CREATE TEMP TABLE notes (id integer)",
			"DROP TABLE incidents",
			"WITH d AS (DELETE FROM incidents RETURNING id) SELECT * FROM d",
			"SELECT 1; DELETE FROM incidents",
			"COMMIT; DELETE FROM incidents",
			"SELECT set_config('default_transaction_read_only', 'off', false); DELETE FROM incidents",
			"COPY incidents TO PROGRAM 'touch /tmp/heddle-pwned'",
			"DO $$ BEGIN DELETE FROM incidents; END $$",
		} {
			res := call(t, ts, ctx, "query", map[string]any{"sql": q})
			if !res.IsError {
				t.Errorf("query(%q) succeeded: %s", q, text(res))
			}
			t.Logf("%s: %s", q, text(res))
		}
		// Changing the session between calls does not outlive the call.
		for _, q := range []string{"SET default_transaction_read_only = off", "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE"} {
			call(t, ts, ctx, "query", map[string]any{"sql": q})
			if res := call(t, ts, ctx, "query", map[string]any{"sql": "DELETE FROM incidents"}); !res.IsError {
				t.Errorf("DELETE after %q succeeded", q)
			}
			if r := rows(t, ts, ctx, "query", map[string]any{"sql": "SHOW default_transaction_read_only"}); r.Rows[0][0] != "on" {
				t.Errorf("after %q the session is %v", q, r.Rows)
			}
		}
		for _, st := range []string{"purge", "sneaky_purge"} {
			if res := call(t, ts, ctx, st, map[string]any{"id": 1}); !res.IsError {
				t.Errorf("%s succeeded: %s", st, text(res))
			}
		}
		if n := srv.count(t, "warehouse", "incidents"); n != 20 {
			t.Errorf("incidents has %d rows, want 20", n)
		}
	})

	t.Run("the session is read-only even for a superuser", func(t *testing.T) {
		// The role check is left out: what stops these writes is
		// default_transaction_read_only and BEGIN READ ONLY alone. The DSN
		// tries to turn both off.
		dsn := srv.dsn("postgres", "warehouse") + "&default_query_exec_mode=simple_protocol&options=-c%20default_transaction_read_only%3Doff"
		e, err := sqllive.OpenPostgres(ctx, dsn, 2000, false)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if _, rows, err := e.Run(ctx, "SHOW default_transaction_read_only"); err != nil || rows[0][0] != "on" {
			t.Errorf("default_transaction_read_only = %v %v, want on whatever the DSN's options say", rows, err)
		}
		for _, q := range []string{
			"DELETE FROM incidents",
			"CREATE TABLE notes (id integer)",
			"SELECT 1; DELETE FROM incidents",
			"COMMIT; DELETE FROM incidents",
			"WITH d AS (DELETE FROM incidents RETURNING id) SELECT * FROM d",
		} {
			if _, _, err := e.Run(ctx, q); err == nil {
				t.Errorf("%q succeeded for a superuser", q)
			} else {
				t.Logf("%s: %s", q, e.Explain(err))
			}
		}
		for _, q := range []string{"SET default_transaction_read_only = off", "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE", "COMMIT"} {
			if _, _, err := e.Run(ctx, q); err != nil {
				t.Logf("%s: %s", q, e.Explain(err))
			}
			if _, _, err := e.Run(ctx, "DELETE FROM incidents"); err == nil || !strings.Contains(e.Explain(err), "25006") {
				t.Errorf("DELETE after %q: %v, want SQLSTATE 25006 (read-only transaction)", q, err)
			}
		}
		if n := srv.count(t, "warehouse", "incidents"); n != 20 {
			t.Errorf("incidents has %d rows, want 20", n)
		}
	})

	t.Run("roles that could write are refused at start-up", func(t *testing.T) {
		for _, role := range []string{
			"postgres", "heddle_owner", "heddle_inserter", "heddle_column", "heddle_truncate", "heddle_trigger",
			"heddle_schema", "heddle_database", "heddle_member", "heddle_createrole", "heddle_alldata",
			"heddle_program", "heddle_sequence",
		} {
			for _, remote := range []string{"required", "optional"} {
				_, err := openPG(t, srv.dsn(role, "warehouse"), remote)
				if !diag.Has(err, diag.SQLNotReadonly) {
					t.Errorf("%s (%s): err = %v, want SQL_NOT_READONLY", role, remote, err)
				} else if remote == "required" {
					t.Logf("%s: %v", role, err)
				}
			}
		}
	})

	t.Run("statement timeout", func(t *testing.T) {
		start := time.Now()
		res := call(t, ts, ctx, "sleepy", nil)
		if code := runtime.RefusalCode(res); code != diag.TransportTimeout {
			t.Errorf("sleepy = %q (%s), want TRANSPORT_TIMEOUT", code, text(res))
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("sleepy took %v with timeout_ms 500", d)
		}
		res = call(t, ts, ctx, "query", map[string]any{"sql": "SELECT pg_sleep(5)"})
		if code := runtime.RefusalCode(res); code != diag.TransportTimeout {
			t.Errorf("query(pg_sleep) = %q (%s), want TRANSPORT_TIMEOUT", code, text(res))
		}
		if r := rows(t, ts, ctx, "by_id", map[string]any{"id": 3}); !slices.Equal(r.ids(), []int{3}) {
			t.Errorf("by_id after timeouts = %v", r.ids())
		}
	})

	t.Run("a million rows are capped without being read", func(t *testing.T) {
		// Read in full, this is a million rows of a kilobyte: a gigabyte.
		// Through a proxy that counts what the server sends: the hundred
		// rows kept and the one that says there are more, about 100 KB.
		px := newProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.port))
		px.setUp(true)
		rt, err := openPG(t, fmt.Sprintf("postgres://heddle_reader@%s/warehouse?sslmode=disable", px.addr()), "required")
		if err != nil {
			t.Fatal(err)
		}
		ts := toolset(t, rt, "analyst")
		q := "SELECT g, repeat('x', 1000) AS pad FROM generate_series(1, 1000000) AS g"
		sent := px.sent.Load()
		start := time.Now()
		r := rows(t, ts, ctx, "query", map[string]any{"sql": q})
		d := time.Since(start)
		sent = px.sent.Load() - sent
		if len(r.Rows) != 100 || !r.Truncated || r.Rows[99][0] != 100.0 {
			t.Errorf("%d rows, truncated %v", len(r.Rows), r.Truncated)
		}
		if sent > 1<<20 {
			t.Errorf("the server sent %d KiB for a capped million-row query, want under 1 MiB", sent>>10)
		}
		t.Logf("capped in %v, %d KiB from the server", d, sent>>10)
	})

	t.Run("injection through parameters is inert", func(t *testing.T) {
		for _, title := range []string{"'; DROP TABLE incidents; --", "x' OR '1'='1", "acme' OR tenant <> '", "$1"} {
			if got := rows(t, ts, ctx, "by_title", map[string]any{"title": title}).ids(); len(got) != 0 {
				t.Errorf("by_title(%q) = %v", title, got)
			}
		}
		for _, id := range []any{"1 OR 1=1", "1; DROP TABLE incidents"} {
			if code := runtime.RefusalCode(call(t, ts, ctx, "by_id", map[string]any{"id": id})); code != diag.ToolArgsInvalid {
				t.Errorf("by_id(%q) = %q, want TOOL_ARGS_INVALID", id, code)
			}
		}
		if n := srv.count(t, "warehouse", "incidents"); n != 20 {
			t.Errorf("incidents has %d rows, want 20", n)
		}
	})

	t.Run("health", func(t *testing.T) {
		rep := rt.Health()
		if len(rep.Dependencies) != 1 || rep.Dependencies[0].State != driver.StateReady || rep.Dependencies[0].Kind != "sql" {
			t.Errorf("health = %+v", rep)
		}
	})

	t.Run("an optional source that was down comes up", func(t *testing.T) {
		px := newProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.port))
		dsn := fmt.Sprintf("postgres://heddle_reader@%s/warehouse?sslmode=disable&connect_timeout=2", px.addr())
		rt, err := openPG(t, dsn, "optional")
		if err != nil {
			t.Fatalf("an optional source that is down: %v", err)
		}
		ts := toolset(t, rt, "analyst")
		if code := runtime.RefusalCode(call(t, ts, ctx, "by_id", map[string]any{"id": 1})); code != diag.ToolUnavailable {
			t.Errorf("by_id while down = %q, want TOOL_UNAVAILABLE", code)
		}
		if d := rt.Health().Dependencies[0]; d.State == driver.StateReady || d.Code != diag.SQLSourceUnreachable || d.Required {
			t.Errorf("dependency while down = %+v", d)
		}
		px.setUp(true)
		waitReady(t, rt)
		if got := rows(t, ts, ctx, "by_id", map[string]any{"id": 1}).ids(); !slices.Equal(got, []int{1}) {
			t.Errorf("by_id after reconnecting = %v", got)
		}

		// A connection lost later: the call reads TOOL_UNAVAILABLE, and the
		// source comes back.
		px.setUp(false)
		px.cut()
		res := call(t, ts, ctx, "by_id", map[string]any{"id": 1})
		if code := runtime.RefusalCode(res); code != diag.ToolUnavailable {
			t.Errorf("by_id on a cut connection = %q (%s), want TOOL_UNAVAILABLE", code, text(res))
		}
		px.setUp(true)
		waitReady(t, rt)
		if got := rows(t, ts, ctx, "by_id", map[string]any{"id": 2}).ids(); !slices.Equal(got, []int{2}) {
			t.Errorf("by_id after the second reconnect = %v", got)
		}
	})
}

func waitReady(t *testing.T, rt *runtime.Runtime) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if rt.Health().Dependencies[0].State == driver.StateReady {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the source did not become ready: %+v", rt.Health())
}

// TestPostgresStartupFailures needs no server.
func TestPostgresStartupFailures(t *testing.T) {
	down := fmt.Sprintf("postgres://heddle_reader@127.0.0.1:%d/warehouse?sslmode=disable&connect_timeout=2", freePort(t))

	_, err := openPG(t, down, "required")
	var se *runtime.StartupError
	if !diag.Has(err, diag.SQLSourceUnreachable) || !errors.As(err, &se) || se.Failures[0].Name != "pg" || !se.Failures[0].Fatal {
		t.Errorf("required and down: err = %v, want a fatal SQL_SOURCE_UNREACHABLE naming pg", err)
	}
	if strings.Contains(fmt.Sprint(err), "heddle_reader") {
		t.Errorf("the error shows the DSN: %v", err)
	}

	rt, err := openPG(t, down, "optional")
	if err != nil {
		t.Fatalf("optional and down: %v", err)
	}
	res := call(t, toolset(t, rt, "analyst"), context.Background(), "by_id", map[string]any{"id": 1})
	if code := runtime.RefusalCode(res); code != diag.ToolUnavailable {
		t.Errorf("by_id = %q, want TOOL_UNAVAILABLE", code)
	}
	if rep := rt.Health(); !rep.Ready || rep.Dependencies[0].State != driver.StateDown {
		t.Errorf("health = %+v, want ready with pg down", rep)
	}

	// A DSN that cannot be parsed stops start-up even when optional, and
	// its text is not repeated.
	for _, remote := range []string{"required", "optional"} {
		_, err := openPG(t, "host=x port=notaport password=hunter2", remote)
		if !diag.Has(err, diag.SQLSourceUnreachable) || strings.Contains(fmt.Sprint(err), "hunter2") {
			t.Errorf("%s, a bad DSN: err = %v", remote, err)
		}
	}

	// A secret that does not resolve keeps its code.
	p := compilePlan(t, strings.ReplaceAll(pgAPI, "$REMOTE", "optional"),
		map[string]string{"analyst": `capabilities: [{kind: sql, source: pg}]`})
	_, err = runtime.Open(context.Background(), p, runtime.Options{Secrets: secrets.New(secrets.Options{
		LookupEnv: func(string) (string, bool) { return "", false },
	})})
	if !diag.Has(err, diag.SecretUnresolved) {
		t.Errorf("an unset dsn_ref: err = %v, want SECRET_UNRESOLVED", err)
	}
}

// proxy forwards TCP connections to a target while up, and refuses them
// (accepts and closes) while down.
type proxy struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	up    bool
	conns []net.Conn
	wg    sync.WaitGroup
	sent  atomic.Int64 // bytes forwarded from the target
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l, target: target}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		l.Close()
		p.setUp(false)
		p.cut()
		p.wg.Wait()
	})
	return p
}

// counting is a reader that adds what it reads to n.
type counting struct {
	r io.Reader
	n *atomic.Int64
}

func (c counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (p *proxy) addr() string { return p.l.Addr().String() }

func (p *proxy) setUp(up bool) {
	p.mu.Lock()
	p.up = up
	p.mu.Unlock()
}

// cut closes every forwarded connection.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		up := p.up
		p.mu.Unlock()
		if !up {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Go(func() { _, _ = io.Copy(s, c); s.Close() })
		p.wg.Go(func() { _, _ = io.Copy(c, counting{s, &p.sent}); c.Close() })
	}
}
