// Package sqllive is the live half of the sql capability kind: it opens
// every SQL source an agent grants — SQLite through modernc.org/sqlite (pure
// Go), PostgreSQL through pgx — read-only, and turns each granted statement
// into a tool.
//
// The built-in set (package builtin) pairs it with the config half; an
// application that links builtin has it.
//
// With the deployment
//
//	sql_sources:
//	  warehouse:
//	    driver: sqlite
//	    path: examples/warehouse.db
//	    statements:
//	      open_incidents:
//	        description: Open incidents at or above a severity
//	        sql: SELECT id, title FROM incidents WHERE severity >= :min_severity AND tenant = :tenant
//	        params:
//	          min_severity: {type: integer}
//	          tenant: {type: string, from: caller.claims.tenant}
//
// and the grant {kind: sql, source: warehouse, statements: [open_incidents],
// query: true}, the agent's toolset has open_incidents, whose input schema
// is {"min_severity": integer} (tenant is the caller's claim, never the
// model's: passing it is TOOL_ARGS_INVALID), and query, which takes {"sql":
// string} and runs free-form SQL — safe only because the engine enforces
// read-only (see sqliteEngine and pgEngine for how, three layers each).
// Statement text is never spliced: every :name becomes a bind marker (? for
// SQLite, $n for PostgreSQL) and values travel as bind arguments.
//
// A result is structuredContent {"columns": [...], "rows": [[...], ...],
// "truncated": bool} plus the same rows as tab-separated text, capped at the
// source's max_rows and (about) max_bytes of row data; reading stops at the
// cap. A statement is cut at the source's timeout_ms (TRANSPORT_TIMEOUT).
//
// Start-up: a missing SQLite file, an unparseable DSN and a role that could
// write abort start-up whatever ai.remote_clients says; a PostgreSQL server
// that cannot be reached is SQL_SOURCE_UNREACHABLE, fatal unless
// ai.remote_clients is optional — then its tools answer TOOL_UNAVAILABLE
// while a supervisor reconnects it (and checks the role again) in the
// background. A connection lost later does the same.
package sqllive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/sqlkind"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/secrets"
)

// KindName is the grant kind this package serves.
const KindName = "sql"

// QueryTool is the name of the free-form query tool a grant with query: true
// adds. The toolset qualifies it (warehouse__query) when two sources offer it.
const QueryTool = "query"

// Kind is the live half of the sql kind.
type Kind struct{}

// engine is one opened database.
type engine interface {
	// run runs one statement with its bind arguments, read-only, within the
	// caps.
	run(ctx context.Context, text string, args []any, lim limits) (*table, error)
	// numbered says whether bind markers are numbered ($1) or positional (?).
	numbered() bool
	// explain returns what the model reads of an engine error, and false
	// when err is not one.
	explain(err error) (string, bool)
	// prepare readies the named statements' texts, before any call.
	prepare(ctx context.Context, texts []string)
	close() error
}

// Open opens every SQL source some agent grants, concurrently, under ctx
// (the start-up deadline).
func (Kind) Open(ctx context.Context, env driver.Env) (driver.Instance, []*driver.Failure, error) {
	res := env.Secrets
	inst := &instance{dbs: map[string]*database{}, log: env.Logger}
	inst.tp, inst.tracer = tracerOf(env)
	inst.ctx, inst.cancel = context.WithCancel(env.Closing)
	sources := sqlkind.PlanSources(env.Plan)
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		src := sources[name]
		if src == nil || len(src.GrantedTo) == 0 {
			continue
		}
		named := *src
		named.Name = name
		d := &database{inst: inst, name: name, spec: &named,
			required: src.Required, state: driver.StateConnecting, since: time.Now()}
		if src.Driver == "postgres" {
			d.sup = driver.NewSupervisor(inst.ctx, d.reconnect, nil)
		}
		inst.dbs[name] = d
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		errs     []error
		failures []*driver.Failure
	)
	for _, name := range slices.Sorted(maps.Keys(inst.dbs)) {
		d := inst.dbs[name]
		wg.Go(func() {
			f, err := d.open(ctx, res)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			if f != nil {
				failures = append(failures, f)
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		inst.Close()
		return nil, nil, errors.Join(errs...)
	}
	for _, f := range failures {
		if !f.Fatal {
			inst.dbs[f.Name].superviseSoon()
		}
	}
	return inst, failures, nil
}

// instance is the sql kind opened for one runtime: one database per
// granted source. It is safe for concurrent use.
type instance struct {
	dbs    map[string]*database
	log    *slog.Logger
	tp     trace.TracerProvider
	tracer trace.Tracer
	ctx    context.Context // done when the runtime or the instance closes
	cancel context.CancelFunc

	mu      sync.Mutex
	sources map[string]*source // by agent and source name: what Source built
}

// Status reports each source as a dependency of kind sql.
func (i *instance) Status() []driver.Dependency {
	out := make([]driver.Dependency, 0, len(i.dbs))
	for _, name := range slices.Sorted(maps.Keys(i.dbs)) {
		out = append(out, i.dbs[name].status())
	}
	return out
}

// Recheck has every PostgreSQL source that is down reconnected now, and
// waits, within ctx, until each attempt has ended. (An SQLite source is
// never down once open.)
func (i *instance) Recheck(ctx context.Context) {
	var wg sync.WaitGroup
	for _, d := range i.dbs {
		if eng, _ := d.current(); eng == nil && d.sup != nil {
			wg.Go(func() { _ = d.sup.Recheck(ctx) })
		}
	}
	wg.Wait()
}

// Close stops the supervisors and closes every database.
func (i *instance) Close() error {
	i.cancel()
	for _, d := range i.dbs {
		if d.sup != nil {
			d.sup.Wait()
		}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(i.dbs)) {
		if err := i.dbs[name].close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Source returns the tools of an agent's grants of one source. An agent may
// grant one source twice (say, different statements): the first grant's
// source carries the union of them all, and the later ones return the same
// source (a toolset keeps one of them, and learns from each grant whether
// it is deferred).
func (i *instance) Source(agent *plan.Agent, g plan.Grant) (driver.Source, error) {
	spec, ok := g.Spec.(*sqlkind.Grant)
	if !ok {
		return nil, fmt.Errorf("agent %s: sql grant has spec %T, want *sqlkind.Grant", agent.Name, g.Spec)
	}
	d := i.dbs[spec.Source]
	if d == nil {
		return nil, diag.New(diag.SQLSourceUnknown, "agent %s: sql source %q was not opened", agent.Name, spec.Source)
	}
	var stmts []string
	query, first := false, true
	for _, og := range agent.Grants {
		other, ok := og.Spec.(*sqlkind.Grant)
		if !ok || other.Source != spec.Source {
			continue
		}
		if first && other != spec {
			// An earlier grant of this source carries this one.
			i.mu.Lock()
			defer i.mu.Unlock()
			if src := i.sources[agent.Name+"\x00"+spec.Source]; src != nil {
				return src, nil
			}
			return nil, nil
		}
		first = false
		for _, s := range other.Statements {
			if !slices.Contains(stmts, s) {
				stmts = append(stmts, s)
			}
		}
		query = query || other.Query
	}
	src, err := d.newSource(agent.Name, stmts, query)
	if err != nil {
		return nil, err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.sources == nil {
		i.sources = map[string]*source{}
	}
	i.sources[agent.Name+"\x00"+spec.Source] = src
	return src, nil
}

// database is one SQL source: its engine once opened, and its state.
type database struct {
	inst     *instance
	name     string
	spec     *sqlkind.Source
	required bool
	secrets  secrets.Resolver
	// pgcfg is a PostgreSQL source's connection settings; after Open only
	// its supervisor (one at a time) touches it.
	pgcfg *pgx.ConnConfig

	mu      sync.Mutex
	eng     engine // nil while not ready
	stmts   map[string]*statement
	state   driver.State
	since   time.Time // when state last changed
	code    diag.Code
	reason  string // driver.Reason of why it is not ready
	readyAt time.Time
	tools   int                // tools offered across agents, for Status
	sup     *driver.Supervisor // PostgreSQL only: brings a lost pool back
}

// open opens the database at start-up. A failure to reach it is a Failure;
// anything else that stops it from opening is an error.
func (d *database) open(ctx context.Context, res secrets.Resolver) (*driver.Failure, error) {
	d.secrets = res
	var (
		eng engine
		err error
	)
	switch d.spec.Driver {
	case "sqlite":
		eng, err = openSQLite(ctx, d.spec, true)
		if err != nil && diag.CodeOf(err) == diag.SQLSourceUnreachable {
			d.setDown(err)
			return &driver.Failure{Name: d.name, Err: err, Fatal: true}, nil
		}
	case "postgres":
		if d.spec.DSNRef == nil {
			return nil, diag.New(diag.SQLSourceInvalid, "sql source %s: a postgres source needs dsn_ref", d.name)
		}
		dsn, rerr := res.Resolve(ctx, *d.spec.DSNRef)
		if rerr != nil {
			return nil, fmt.Errorf("sql source %s: dsn_ref: %w", d.name, rerr)
		}
		if d.pgcfg, err = pgConfig(d.spec, dsn); err != nil {
			return nil, err
		}
		eng, err = openPostgres(ctx, d.spec, d.pgcfg, true)
		if err != nil && diag.CodeOf(err) == diag.SQLSourceUnreachable {
			d.setDown(err)
			return &driver.Failure{Name: d.name, Err: err, Fatal: d.required}, nil
		}
	default:
		return nil, diag.New(diag.SQLSourceInvalid, "sql source %s: unknown driver %q", d.name, d.spec.Driver)
	}
	if err != nil {
		return nil, err
	}
	if err := d.setReady(ctx, eng); err != nil {
		eng.close()
		return nil, err
	}
	return nil, nil
}

// setReady installs an opened engine, with the statements rewritten and
// prepared for it.
func (d *database) setReady(ctx context.Context, eng engine) error {
	stmts := make(map[string]*statement, len(d.spec.Statements))
	texts := make([]string, 0, len(d.spec.Statements))
	for _, name := range slices.Sorted(maps.Keys(d.spec.Statements)) {
		st, err := rewrite(name, d.spec.Statements[name], eng.numbered())
		if err != nil {
			return fmt.Errorf("sql source %s: %w", d.name, err)
		}
		stmts[name] = st
		texts = append(texts, st.text)
	}
	eng.prepare(ctx, texts)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.moveTo(driver.StateReady)
	d.eng, d.stmts, d.code, d.reason, d.readyAt = eng, stmts, "", "", time.Now()
	return nil
}

// setDown records a source that is not ready, and err, the coded error of
// why. It is called by what owns pgcfg: Open, or the supervisor.
func (d *database) setDown(err error) {
	var hide []string
	if d.pgcfg != nil {
		hide = append(hide, d.pgcfg.Password)
	}
	reason := driver.Reason(err, d.name, hide...)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.moveTo(driver.StateDown)
	d.code, d.reason = diag.CodeOf(err), reason
}

// moveTo sets the source's state; since moves only when it changes. d.mu
// is held.
func (d *database) moveTo(st driver.State) {
	if d.state != st {
		d.state, d.since = st, time.Now()
	}
}

// current returns the engine and statements, or nil when the source is not
// ready.
func (d *database) current() (engine, map[string]*statement) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state != driver.StateReady {
		return nil, nil
	}
	return d.eng, d.stmts
}

func (d *database) status() driver.Dependency {
	d.mu.Lock()
	defer d.mu.Unlock()
	since := d.since.UTC().Truncate(time.Millisecond)
	dep := driver.Dependency{Name: d.name, Kind: KindName, State: d.state, Since: &since, Required: d.required,
		Tools: d.tools, Agents: slices.Clone(d.spec.GrantedTo)}
	if d.state != driver.StateReady {
		dep.Code, dep.Reason = d.code, d.reason
		if dep.Code == "" {
			dep.Code = diag.SQLSourceUnreachable
		}
	} else {
		t := d.readyAt.UTC().Truncate(time.Millisecond)
		dep.ListedAt = &t
	}
	return dep
}

func (d *database) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.moveTo(driver.StateClosed)
	if d.eng == nil {
		return nil
	}
	err := d.eng.close()
	d.eng = nil
	return err
}

// lost marks a PostgreSQL source down after a call found its connection
// broken, and starts the supervisor. SQLite sources have no connection to
// lose.
func (d *database) lost(eng engine) {
	d.mu.Lock()
	if d.eng != eng || d.state != driver.StateReady {
		d.mu.Unlock()
		return
	}
	d.moveTo(driver.StateDown)
	d.code, d.reason = diag.ToolUnavailable, "lost its connection; reconnecting"
	d.mu.Unlock()
	d.inst.log.Warn("sql source lost its connection; reconnecting", "source", d.name, "code", diag.ToolUnavailable)
	d.superviseSoon()
}

// superviseSoon wakes the supervisor of a PostgreSQL source that is down
// (driver.Supervisor: capped, jittered backoff, single-flight, woken by
// callers that find the source down). SQLite sources have no connection to
// lose.
func (d *database) superviseSoon() {
	if d.sup != nil {
		d.sup.Wake()
	}
}

// reconnect is one attempt of the supervisor: it resolves dsn_ref again —
// so rotated credentials are picked up —, opens the pool, checks the role
// again, and makes the source ready. A role that could write keeps the
// source down (SQL_NOT_READONLY) and ends the attempts until a caller finds
// it down again.
func (d *database) reconnect(ctx context.Context) error {
	d.mu.Lock()
	up := d.state == driver.StateReady || d.state == driver.StateClosed
	d.mu.Unlock()
	if up {
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if dsn, err := d.secrets.Resolve(actx, *d.spec.DSNRef); err != nil {
		d.inst.log.Debug("sql source: dsn_ref does not resolve; reconnecting with the last value", "source", d.name, "code", diag.CodeOf(err))
	} else if cfg, err := pgConfig(d.spec, dsn); err == nil {
		d.pgcfg = cfg
	}
	e, err := openPostgres(actx, d.spec, d.pgcfg, true)
	if err != nil {
		if diag.CodeOf(err) == diag.SQLNotReadonly {
			d.inst.log.Error("sql source reconnected with a role that could write; it stays down", "source", d.name, "code", diag.SQLNotReadonly, "reason", err.Error())
			d.setDown(err)
			return nil
		}
		d.inst.log.Debug("sql source reconnect failed", "source", d.name, "reason", diag.Reason(err))
		return err
	}
	d.mu.Lock()
	if d.state == driver.StateClosed || ctx.Err() != nil {
		d.mu.Unlock()
		e.close()
		return nil
	}
	old := d.eng
	d.mu.Unlock()
	if err := d.setReady(ctx, e); err != nil {
		e.close()
		d.inst.log.Error("sql source cannot be made ready", "source", d.name, "reason", err.Error())
		return nil
	}
	if old != nil {
		old.close()
	}
	d.inst.log.Info("sql source reconnected", "source", d.name)
	return nil
}

// newSource builds one agent's view of the source.
func (d *database) newSource(agent string, stmts []string, query bool) (*source, error) {
	s := &source{db: d, agent: agent, byName: map[string]*toolSpec{}}
	for _, name := range stmts {
		spec := d.spec.Statements[name]
		if spec == nil {
			return nil, diag.New(diag.SQLStatementUnknown, "agent %s: sql source %s declares no statement %q", agent, d.name, name)
		}
		desc := spec.Description
		if desc == "" {
			desc = fmt.Sprintf("Runs the read-only statement %s on %s.", name, d.name)
		}
		t := &mcp.Tool{Name: name, Description: desc, InputSchema: inputSchema(spec), Annotations: annotations()}
		s.tools = append(s.tools, t)
		s.byName[name] = &toolSpec{statement: name}
	}
	if query {
		if _, clash := s.byName[QueryTool]; clash {
			return nil, diag.New(diag.ToolNameConflict, "agent %s: sql source %s has a statement named %s, which clashes with the free-form query tool", agent, d.name, QueryTool)
		}
		s.tools = append(s.tools, &mcp.Tool{Name: QueryTool, Description: d.queryDescription(), InputSchema: querySchema(), Annotations: annotations()})
		s.byName[QueryTool] = &toolSpec{query: true}
	}
	d.mu.Lock()
	d.tools = max(d.tools, len(s.tools))
	d.mu.Unlock()
	return s, nil
}

func (d *database) queryDescription() string {
	dialect := "SQLite"
	if d.spec.Driver == "postgres" {
		dialect = "PostgreSQL"
	}
	return fmt.Sprintf("Runs one read-only SQL query (%s dialect) on the %s database and returns its rows as columns and rows; "+
		"at most %d rows are returned. Writes and schema changes are refused by the database.", dialect, d.name, d.spec.MaxRows)
}

func querySchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"sql": map[string]any{"type": "string", "minLength": 1, "description": "one SQL query (SELECT, WITH …)"},
		},
		"required":             []string{"sql"},
		"additionalProperties": false,
	}
}

func annotations() *mcp.ToolAnnotations {
	no := false
	return &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &no}
}

// toolSpec says what one tool runs.
type toolSpec struct {
	statement string // or
	query     bool
}

// source is one agent's grant(s) of one SQL source. It is immutable after
// construction and safe for concurrent calls.
type source struct {
	db     *database
	agent  string
	tools  []*mcp.Tool
	byName map[string]*toolSpec
}

// Name is the name the deployment gives the source.
func (s *source) Name() string { return s.db.name }

// Tools returns the grant's tools; they never change, also while the
// source is down.
func (s *source) Tools(context.Context) ([]*mcp.Tool, uint64, error) { return s.tools, 1, nil }

// Timing is timeout_ms and a margin: the statement's own deadline
// (timeout_ms) ends it first, with a message that names the cause.
func (s *source) Timing() driver.Timing {
	return driver.Timing{Timeout: time.Duration(s.db.spec.TimeoutMS)*time.Millisecond + time.Second}
}

// MaxResultBytes leaves room for the rows twice (structured and as text)
// within max_bytes each.
func (s *source) MaxResultBytes() int { return 2*s.db.spec.MaxBytes + 64<<10 }

// Down reports the source not ready.
func (s *source) Down() bool {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	return s.db.state != driver.StateReady
}

// Call runs one statement, or one free-form query, as the caller carried by
// ctx.
func (s *source) Call(ctx context.Context, tool *mcp.Tool, args map[string]any, _ driver.CallOptions) (*mcp.CallToolResult, error) {
	ts := s.byName[tool.Name]
	if ts == nil {
		return nil, diag.New(diag.ToolUnknown, "sql source %s grants agent %s no tool %q", s.db.name, s.agent, tool.Name)
	}
	eng, stmts := s.db.current()
	if eng == nil {
		s.db.superviseSoon() // a caller found it down: try now, not when the backoff says
		return nil, diag.New(diag.ToolUnavailable, "the database %s is unavailable; try again later", s.db.name)
	}
	var (
		text  string
		binds []any
	)
	if ts.query {
		q, ok := args["sql"].(string)
		if !ok || q == "" {
			return nil, diag.New(diag.ToolArgsInvalid, "query: the argument sql (a string) is required")
		}
		text = q
	} else {
		st := stmts[ts.statement]
		var err error
		if binds, err = st.bindArgs(args, heddle.Caller(ctx)); err != nil {
			return nil, err
		}
		text = st.text
	}
	timeout := time.Duration(s.db.spec.TimeoutMS) * time.Millisecond
	if _, pg := eng.(*pgEngine); pg {
		// statement_timeout ends the statement on the server first, which
		// keeps the connection; this deadline is the backstop.
		timeout += 250 * time.Millisecond
	}
	sctx, span := s.startStatement(ctx, ts.statement, text)
	rctx, cancel := context.WithTimeout(sctx, timeout)
	defer cancel()
	lim := limits{rows: s.db.spec.MaxRows, bytes: s.db.spec.MaxBytes}
	t, err := eng.run(rctx, text, binds, lim)
	if err == nil {
		span.End()
		return t.toolResult(lim), nil
	}
	res, err := s.failed(ctx, rctx, eng, tool, err)
	endStatement(span, res, err)
	return res, err
}

// failed is the answer of a statement that failed with err.
func (s *source) failed(ctx, rctx context.Context, eng engine, tool *mcp.Tool, err error) (*mcp.CallToolResult, error) {
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case rctx.Err() != nil || statementTimedOut(err):
		return nil, diag.Wrap(diag.TransportTimeout, err, "%s did not finish within the source's timeout_ms (%d ms); narrow the query, or retry", tool.Name, s.db.spec.TimeoutMS)
	case s.db.spec.Driver == "postgres" && connectionLost(err):
		// The connection, not the statement, failed. When the server does
		// not answer a fresh connection either, the source is down until
		// the supervisor has it back.
		if pe, ok := eng.(*pgEngine); ok && !pe.reachable(ctx) {
			s.db.lost(eng)
		}
		return nil, diag.Wrap(diag.ToolUnavailable, err, "the database %s is unavailable; try again later", s.db.name)
	}
	if msg, ok := eng.explain(err); ok {
		return errorResult(msg), nil
	}
	// A client-side failure: an argument pgx cannot encode for the
	// parameter's column type, a value it cannot decode.
	return errorResult("the statement failed: " + err.Error()), nil
}

// errorResult is a tool's own failure, as the model reads it.
func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

var (
	_ driver.Kind           = Kind{}
	_ driver.Instance       = (*instance)(nil)
	_ driver.Rechecker      = (*instance)(nil)
	_ driver.Source         = (*source)(nil)
	_ driver.TimedSource    = (*source)(nil)
	_ driver.CappedSource   = (*source)(nil)
	_ driver.FallibleSource = (*source)(nil)
	_ engine                = (*sqliteEngine)(nil)
	_ engine                = (*pgEngine)(nil)
)
