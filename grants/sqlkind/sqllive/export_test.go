package sqllive

import (
	"context"

	"github.com/heddlehq/heddle/grants/sqlkind"
	"github.com/heddlehq/heddle/secrets"
)

// Engine exposes one opened database to the tests, below the toolset: it
// lets them check each read-only layer on its own.
type Engine struct{ e engine }

// OpenSQLite opens path as a source does; authorize false leaves out the
// authorizer, so the layers below it (mode=ro, query_only) stand alone.
func OpenSQLite(ctx context.Context, path string, authorize bool) (*Engine, error) {
	e, err := openSQLite(ctx, &sqlkind.Source{Name: "test", Driver: "sqlite", Path: path, TimeoutMS: 5000}, authorize)
	if err != nil {
		return nil, err
	}
	return &Engine{e}, nil
}

// OpenPostgres opens dsn as a source does; verify false skips the role
// check, so the session layers stand alone (even for a superuser).
func OpenPostgres(ctx context.Context, dsn string, timeoutMS int, verify bool) (*Engine, error) {
	src := &sqlkind.Source{Name: "test", Driver: "postgres", TimeoutMS: timeoutMS}
	cfg, err := pgConfig(src, secrets.NewValue(dsn))
	if err != nil {
		return nil, err
	}
	e, err := openPostgres(ctx, src, cfg, verify)
	if err != nil {
		return nil, err
	}
	return &Engine{e}, nil
}

// Run runs one statement as a tool call does, with at most 1000 rows.
func (e *Engine) Run(ctx context.Context, text string, args ...any) (columns []string, rows [][]any, err error) {
	t, err := e.e.run(ctx, text, args, limits{rows: 1000, bytes: 1 << 20})
	if err != nil {
		return nil, nil, err
	}
	return t.Columns, t.Rows, nil
}

// Explain is what the model reads of an engine error.
func (e *Engine) Explain(err error) string {
	msg, _ := e.e.explain(err)
	return msg
}

// Close closes the database.
func (e *Engine) Close() error { return e.e.close() }

// Rewrite exposes the placeholder rewrite.
func Rewrite(spec *sqlkind.Statement, numbered bool) (text string, binds []int, err error) {
	st, err := rewrite("test", spec, numbered)
	if err != nil {
		return "", nil, err
	}
	return st.text, st.binds, nil
}

// Cursorable exposes the choice of the cursor path.
var Cursorable = cursorable
