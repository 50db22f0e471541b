package sqllive

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/sqlkind"
)

// sqliteEngine is a SQLite source opened read-only three times over:
//
//   - the file is opened with mode=ro, so SQLite itself cannot write it;
//   - every connection runs PRAGMA query_only=1 (and trusted_schema=0, so a
//     view or trigger in the file cannot call functions with side effects);
//   - every connection has an authorizer that lets a statement compile only
//     when it reads: SELECT, reads of columns, functions (but not
//     load_extension), recursive CTEs, and a short list of introspection
//     PRAGMAs. Writes, DDL, ATTACH/DETACH, transactions and PRAGMA
//     assignments are refused before they run.
//
// The authorizer is what answers the model: "not authorized" at compile
// time, before a statement can touch the file. The two layers below it
// stand on their own (a test removes the authorizer and checks them).
type sqliteEngine struct {
	db *sql.DB
	// stmts holds the named statements, prepared once (per connection, by
	// database/sql); it is written by prepare, before any call.
	stmts map[string]*sql.Stmt
}

// sqliteDSN is the URI a source's file is opened with.
func sqliteDSN(path string, timeoutMS int) string {
	// SQLite URI filenames decode %HH; '?' and '#' would end the path.
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + esc + "?mode=ro" +
		"&_pragma=busy_timeout(" + strconv.Itoa(timeoutMS) + ")" +
		"&_pragma=query_only(1)" +
		"&_pragma=trusted_schema(0)"
}

// openSQLite opens a source's file. A file that is missing, or is not a
// database, is SQL_SOURCE_UNREACHABLE.
func openSQLite(ctx context.Context, src *sqlkind.Source, authorize bool) (*sqliteEngine, error) {
	fi, err := os.Stat(src.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !filepath.IsAbs(src.Path):
		wd, _ := os.Getwd()
		return nil, diag.Wrap(diag.SQLSourceUnreachable, err, "sql source %s: the SQLite file %s does not exist; a relative path is resolved against the working directory %s: run heddle there, create the database (for the shipped example: go run ./examples/warehouse in a clone of heddle) or give an absolute path", src.Name, src.Path, wd)
	case errors.Is(err, fs.ErrNotExist):
		return nil, diag.Wrap(diag.SQLSourceUnreachable, err, "sql source %s: the SQLite file %s does not exist", src.Name, src.Path)
	case err != nil:
		return nil, diag.Wrap(diag.SQLSourceUnreachable, err, "sql source %s: the SQLite file %s cannot be read", src.Name, src.Path)
	case !fi.Mode().IsRegular():
		return nil, diag.New(diag.SQLSourceUnreachable, "sql source %s: %s is not a regular file", src.Name, src.Path)
	}
	db := sql.OpenDB(&sqliteConnector{dsn: sqliteDSN(src.Path, src.TimeoutMS), drv: &sqlite.Driver{}, authorize: authorize})
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	// A file replaced by rename (how a nightly export lands) is seen once
	// the connections that hold the old one are recycled.
	db.SetConnMaxLifetime(5 * time.Minute)
	e := &sqliteEngine{db: db}
	var queryOnly int
	if err := db.QueryRowContext(ctx, "PRAGMA query_only").Scan(&queryOnly); err != nil {
		db.Close()
		return nil, diag.Wrap(diag.SQLSourceUnreachable, err, "sql source %s: %s cannot be opened as a SQLite database", src.Name, src.Path)
	}
	if queryOnly != 1 {
		db.Close()
		return nil, diag.New(diag.SQLNotReadonly, "sql source %s: the connection did not enter query_only mode", src.Name)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
		db.Close()
		return nil, diag.Wrap(diag.SQLSourceUnreachable, err, "sql source %s: %s is not a readable SQLite database", src.Name, src.Path)
	}
	return e, nil
}

func (*sqliteEngine) numbered() bool { return false }

func (e *sqliteEngine) close() error {
	for _, st := range e.stmts {
		st.Close()
	}
	return e.db.Close()
}

// prepare compiles the named statements once, so a call does not parse
// and authorize its SQL again. A statement that does not compile (a typo,
// or a write the authorizer refuses) is left to fail at call time, as a
// result the model reads.
func (e *sqliteEngine) prepare(ctx context.Context, texts []string) {
	e.stmts = make(map[string]*sql.Stmt, len(texts))
	for _, text := range texts {
		if st, err := e.db.PrepareContext(ctx, text); err == nil {
			e.stmts[text] = st
		}
	}
}

// run runs one statement in autocommit mode; SQLite stops stepping it once
// the caps are reached.
func (e *sqliteEngine) run(ctx context.Context, text string, args []any, lim limits) (*table, error) {
	var (
		rows *sql.Rows
		err  error
	)
	if st := e.stmts[text]; st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = e.db.QueryContext(ctx, text, args...)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return readRows(rows, lim, false)
}

// explain turns a SQLite error into what the model reads.
func (*sqliteEngine) explain(err error) (string, bool) {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return "", false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_AUTH:
		return "not allowed: this source is read-only; only SELECT statements (and introspection PRAGMAs such as table_info) may run", true
	case sqlite3.SQLITE_READONLY:
		return "not allowed: this source is read-only", true
	}
	return se.Error(), true
}

// sqliteConnector opens connections from a private driver value, so the
// process-wide "sqlite" driver's hooks, functions and modules never apply,
// and installs the read-only authorizer on each before database/sql uses it.
type sqliteConnector struct {
	dsn       string
	drv       *sqlite.Driver
	authorize bool
}

func (c *sqliteConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	if !c.authorize {
		return conn, nil
	}
	ar, ok := conn.(sqlite.AuthorizerRegisterer)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("the SQLite driver offers no authorizer")
	}
	if err := ar.RegisterAuthorizer(readOnlyAuthorizer); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func (c *sqliteConnector) Driver() driver.Driver { return c.drv }

// introspection PRAGMAs may take an argument (a table or index name);
// readablePragmas may only be read, never assigned.
var (
	introspectionPragmas = map[string]bool{
		"table_info": true, "table_xinfo": true, "table_list": true,
		"index_list": true, "index_info": true, "index_xinfo": true,
		"foreign_key_list": true, "collation_list": true,
	}
	readablePragmas = map[string]bool{
		"query_only": true, "user_version": true, "application_id": true, "encoding": true,
	}
	deniedFunctions = map[string]bool{
		"load_extension": true, "readfile": true, "writefile": true, "edit": true, "fts3_tokenizer": true,
	}
)

// readOnlyAuthorizer lets a statement compile only when everything it does
// is a read. See sqliteEngine.
func readOnlyAuthorizer(action sqlite.AuthorizerActionCode, arg1, arg2, _, _ string) sqlite.AuthorizerReturnCode {
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRead, sqlite.AuthRecursive:
		return sqlite.AuthorizerOK
	case sqlite.AuthFunction:
		if deniedFunctions[strings.ToLower(arg2)] {
			return sqlite.AuthorizerDeny
		}
		return sqlite.AuthorizerOK
	case sqlite.AuthPragma:
		name := strings.ToLower(arg1)
		if introspectionPragmas[name] || readablePragmas[name] && arg2 == "" {
			return sqlite.AuthorizerOK
		}
	}
	return sqlite.AuthorizerDeny
}

var _ driver.Connector = (*sqliteConnector)(nil)
