package sqllive

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/sqlkind"
	"github.com/heddlehq/heddle/secrets"
)

// pgEngine is a PostgreSQL source. Read-only is enforced three times over:
//
//   - every session starts with default_transaction_read_only=on (a
//     start-up parameter, which wins over anything the DSN's options say);
//   - every statement runs in its own BEGIN READ ONLY transaction that is
//     always rolled back, so even a session setting the statement changed
//     (SET default_transaction_read_only = off) is undone with it; and
//     statements go through the extended protocol only, one statement per
//     message, so no "; COMMIT; …" can follow a statement out of its
//     transaction;
//   - at start-up (and on every reconnect) the role is checked: a role that
//     could write — superuser, CREATEROLE, CREATEDB, REPLICATION, a member
//     of pg_write_all_data, pg_write_server_files, pg_execute_server_program
//     or pg_maintain, the owner of the database or of any schema, table or
//     sequence outside the system schemas, or one holding INSERT, UPDATE,
//     DELETE, TRUNCATE, TRIGGER (MAINTAIN on 17+) on a table, UPDATE on a
//     sequence, or CREATE on the database or a schema, itself or through any
//     role it is a member of — is refused with SQL_NOT_READONLY. A read-only
//     transaction is a promise the session can take back before its first
//     query; privileges are what the server enforces whatever the session
//     does.
//
// statement_timeout is the source's timeout_ms.
type pgEngine struct {
	db *sql.DB
}

// pgConfig parses a DSN and adds heddle's session settings. The error never
// contains the DSN.
func pgConfig(src *sqlkind.Source, dsn secrets.Value) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn.Reveal())
	if err != nil {
		return nil, diag.New(diag.SQLSourceUnreachable, "sql source %s: the value of dsn_ref is not a PostgreSQL connection string", src.Name)
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["default_transaction_read_only"] = "on"
	cfg.RuntimeParams["statement_timeout"] = strconv.Itoa(src.TimeoutMS)
	// A transaction heddle left open (a worker stopped mid-call) must not
	// hold its snapshot and locks for long.
	cfg.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.Itoa(2*src.TimeoutMS + 1000)
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "heddle"
	}
	// The extended protocol only: one statement per message. The DSN may not
	// choose otherwise (default_query_exec_mode=simple_protocol would let a
	// statement carry "; COMMIT; …").
	cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	if cfg.StatementCacheCapacity <= 0 {
		cfg.StatementCacheCapacity = 512
	}
	return cfg, nil
}

// openPostgres connects and verifies the role. A server that cannot be
// reached or refuses the login is SQL_SOURCE_UNREACHABLE; a role that could
// write is SQL_NOT_READONLY.
func openPostgres(ctx context.Context, src *sqlkind.Source, cfg *pgx.ConnConfig, verify bool) (*pgEngine, error) {
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	db.SetConnMaxIdleTime(5 * time.Minute)
	db.SetConnMaxLifetime(30 * time.Minute)
	e := &pgEngine{db: db}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, diag.Wrap(diag.SQLSourceUnreachable, err, "sql source %s: cannot connect to PostgreSQL at %s:%d", src.Name, cfg.Host, cfg.Port)
	}
	if verify {
		if err := e.verify(ctx, src); err != nil {
			db.Close()
			return nil, err
		}
	}
	return e, nil
}

// verify checks the session and the role; see pgEngine.
func (e *pgEngine) verify(ctx context.Context, src *sqlkind.Source) error {
	tx, err := e.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return diag.Wrap(diag.SQLSourceUnreachable, err, "sql source %s: cannot begin a read-only transaction", src.Name)
	}
	defer tx.Rollback()
	var role, dtro, tro string
	var version int
	if err := tx.QueryRowContext(ctx, `SELECT current_user::text,
		current_setting('default_transaction_read_only'), current_setting('transaction_read_only'),
		current_setting('server_version_num')::int`).Scan(&role, &dtro, &tro, &version); err != nil {
		return diag.Wrap(diag.SQLSourceUnreachable, err, "sql source %s: cannot read the session's settings", src.Name)
	}
	if dtro != "on" || tro != "on" {
		return diag.New(diag.SQLNotReadonly, "sql source %s: the session is not read-only (default_transaction_read_only=%s, transaction_read_only=%s); is a pooler dropping start-up parameters?", src.Name, dtro, tro)
	}
	tablePrivs := "INSERT, UPDATE, DELETE, TRUNCATE, TRIGGER"
	if version >= 170000 {
		tablePrivs += ", MAINTAIN"
	}
	rows, err := tx.QueryContext(ctx, writeCapabilities, tablePrivs)
	if err != nil {
		return diag.Wrap(diag.SQLSourceUnreachable, err, "sql source %s: cannot read the role's privileges", src.Name)
	}
	defer rows.Close()
	var reasons []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return diag.Wrap(diag.SQLSourceUnreachable, err, "sql source %s: cannot read the role's privileges", src.Name)
		}
		reasons = append(reasons, r)
	}
	if err := rows.Err(); err != nil {
		return diag.Wrap(diag.SQLSourceUnreachable, err, "sql source %s: cannot read the role's privileges", src.Name)
	}
	if len(reasons) == 0 {
		return nil
	}
	more := ""
	if len(reasons) > 5 {
		more = fmt.Sprintf(" (and %d more)", len(reasons)-5)
		reasons = reasons[:5]
	}
	return diag.New(diag.SQLNotReadonly, "sql source %s: role %s could write: %s%s; connect with a role that has only SELECT (and USAGE on its schemas)",
		src.Name, role, strings.Join(reasons, "; "), more)
}

// writeCapabilities lists what lets the current role — or any role it is a
// member of, since it may SET ROLE to one — write. $1 is the list of table
// privileges that write. At most 20 reasons.
const writeCapabilities = `
WITH me AS (
	SELECT r.oid, r.rolname, r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolreplication
	FROM pg_catalog.pg_roles r
	WHERE pg_catalog.pg_has_role(current_user, r.oid, 'MEMBER')
), ns AS (
	SELECT n.oid, n.nspname, n.nspowner
	FROM pg_catalog.pg_namespace n
	WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
	  AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp\_%'
), rel AS (
	SELECT c.oid, c.relname, c.relkind, c.relowner, ns.nspname
	FROM pg_catalog.pg_class c JOIN ns ON ns.oid = c.relnamespace
	WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
)
SELECT format('%I is a superuser', rolname) FROM me WHERE rolsuper
UNION ALL SELECT format('%I has CREATEROLE', rolname) FROM me WHERE rolcreaterole
UNION ALL SELECT format('%I has CREATEDB', rolname) FROM me WHERE rolcreatedb
UNION ALL SELECT format('%I has REPLICATION', rolname) FROM me WHERE rolreplication
UNION ALL SELECT format('member of %I', rolname) FROM me
	WHERE rolname IN ('pg_write_all_data', 'pg_write_server_files', 'pg_execute_server_program', 'pg_maintain')
UNION ALL SELECT format('%I owns database %I', me.rolname, d.datname)
	FROM me JOIN pg_catalog.pg_database d ON d.datdba = me.oid WHERE d.datname = current_database()
UNION ALL SELECT format('%I may CREATE in database %I', me.rolname, current_database())
	FROM me WHERE pg_catalog.has_database_privilege(me.oid, current_database(), 'CREATE')
UNION ALL SELECT format('%I owns schema %I', me.rolname, ns.nspname) FROM me JOIN ns ON ns.nspowner = me.oid
UNION ALL SELECT format('%I may CREATE in schema %I', me.rolname, ns.nspname)
	FROM me CROSS JOIN ns WHERE pg_catalog.has_schema_privilege(me.oid, ns.oid, 'CREATE')
UNION ALL SELECT format('%I owns %I.%I', me.rolname, rel.nspname, rel.relname) FROM me JOIN rel ON rel.relowner = me.oid
UNION ALL SELECT format('%I may write %I.%I', me.rolname, rel.nspname, rel.relname)
	FROM me CROSS JOIN rel
	WHERE rel.relkind <> 'S' AND (pg_catalog.has_table_privilege(me.oid, rel.oid, $1)
	   OR pg_catalog.has_any_column_privilege(me.oid, rel.oid, 'INSERT, UPDATE'))
UNION ALL SELECT format('%I may UPDATE sequence %I.%I', me.rolname, rel.nspname, rel.relname)
	FROM me CROSS JOIN rel
	WHERE rel.relkind = 'S' AND pg_catalog.has_sequence_privilege(me.oid, rel.oid, 'UPDATE')
LIMIT 20`

func (*pgEngine) numbered() bool { return true }
func (e *pgEngine) close() error { return e.db.Close() }

// prepare does nothing: pgx prepares each statement once per connection
// (QueryExecModeCacheStatement).
func (*pgEngine) prepare(context.Context, []string) {}

// cursorName names the cursor a statement's rows are fetched through.
const cursorName = "heddle_rows"

// run runs one statement in a read-only transaction that is always rolled
// back. A query (SELECT, WITH, VALUES, TABLE) is run through a cursor and
// only max_rows+1 rows are fetched, so the server stops producing rows
// there and no more cross the network; any other statement (EXPLAIN, SHOW)
// is run directly. Choosing the path by the first keyword is no security
// decision: both paths run in the same read-only transaction.
func (e *pgEngine) run(ctx context.Context, text string, args []any, lim limits) (*table, error) {
	tx, err := e.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var rows *sql.Rows
	if cursorable(text) {
		// QueryContext, never ExecContext: pgx sends an argument-less Exec
		// through the simple protocol, which runs several statements.
		decl, err := tx.QueryContext(ctx, "DECLARE "+cursorName+" NO SCROLL CURSOR FOR "+text, args...)
		if err != nil {
			return nil, err
		}
		decl.Close()
		if err := decl.Err(); err != nil {
			return nil, err
		}
		// The rows a FETCH returns depend on the cursor, not on its text: it
		// must be described afresh each time (QueryExecModeExec: unnamed,
		// one round trip), never from pgx's statement cache.
		rows, err = tx.QueryContext(ctx, "FETCH FORWARD "+strconv.Itoa(lim.rows+1)+" FROM "+cursorName, pgx.QueryExecModeExec)
		if err != nil {
			return nil, err
		}
	} else {
		rows, err = tx.QueryContext(ctx, text, args...)
		if err != nil {
			return nil, err
		}
	}
	defer rows.Close()
	return readRows(rows, lim, true)
}

// cursorable reports whether a statement's first keyword, after comments,
// white space and opening parentheses, starts a query a cursor can run.
func cursorable(text string) bool {
	i := 0
	for i < len(text) {
		switch c := text[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '(':
			i++
		case strings.HasPrefix(text[i:], "--"):
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case strings.HasPrefix(text[i:], "/*"):
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				return false
			}
			i += end + 4
		default:
			j := i
			for j < len(text) && (text[j] >= 'a' && text[j] <= 'z' || text[j] >= 'A' && text[j] <= 'Z') {
				j++
			}
			switch strings.ToUpper(text[i:j]) {
			case "SELECT", "WITH", "VALUES", "TABLE":
				return true
			}
			return false
		}
	}
	return false
}

// explain turns a PostgreSQL error into what the model reads: the server's
// message and SQLSTATE, without its detail (which may quote row data).
func (*pgEngine) explain(err error) (string, bool) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return "", false
	}
	return fmt.Sprintf("%s: %s (SQLSTATE %s)", pe.Severity, pe.Message, pe.Code), true
}

// statementTimedOut reports a statement the server cancelled at
// statement_timeout.
func statementTimedOut(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "57014"
}

// connectionLost reports an error that says the connection, not the
// statement, failed: a broken, refused or closed connection, and the
// server's own connection exceptions and shutdown notices. Context errors
// are the caller's and are told apart before.
func connectionLost(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// admin_shutdown, crash_shutdown, cannot_connect_now, and the
		// connection exception class.
		return pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" || strings.HasPrefix(pe.Code, "08")
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err)
}

// reachable reports whether the server answers a ping within a second.
func (e *pgEngine) reachable(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	return e.db.PingContext(ctx) == nil
}
