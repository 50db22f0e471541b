package sqlkind

import (
	"slices"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
)

// Codes returns the catalogue entries of the codes only the sql kind
// reports, from this package or its live half (grants.Coded). Codes it
// shares with the core, an auth strategy or another kind are catalogued by
// the core (diag.Catalog).
func (Kind) Codes() []diag.Entry { return slices.Clone(codes) }

var codes = []diag.Entry{
	{Code: diag.SQLSourceUnknown, Phase: diag.PhaseCompile,
		Meaning: "An sql grant names a source ai.sql_sources does not declare, or names none.",
		Fix:     "Declare the source, or correct the name."},
	{Code: diag.SQLSourceInvalid, Phase: diag.PhaseCompile,
		Meaning: "An SQL source has an unknown driver, or lacks what its driver needs (path for sqlite, dsn_ref for postgres), or mixes the two.",
		Fix:     "Use driver sqlite with path, or driver postgres with dsn_ref."},
	{Code: diag.SQLStatementUnknown, Phase: diag.PhaseCompile,
		Meaning: "An sql grant names a statement its source does not declare, or grants nothing at all.",
		Fix:     "Declare the statement under the source's statements, or correct the name."},
	{Code: diag.SQLStatementInvalid, Phase: diag.PhaseCompile,
		Meaning: "A statement has no SQL, uses a :parameter it does not declare (or declares one it never uses), gives a parameter an unknown type, or binds it from something other than the caller.",
		Fix:     "Declare every :name under params with a type (string, integer, number, boolean); from: takes caller.subject or caller.claims.NAME."},
	{Code: diag.SQLNotReadonly, Phase: diag.PhaseStartup,
		Meaning: "An SQL source's session could write: the database or role allows writes that heddle's read-only session settings would not stop.",
		Fix:     "Connect with a role that has only SELECT privileges.",
		Example: "dsn_ref: ${env:PG_DSN}   # a role that owns tables"},
	{Code: diag.SQLSourceUnreachable, Phase: diag.PhaseStartup,
		Meaning: "An SQL source could not be opened at start-up: the SQLite file does not exist or is not a database, or the PostgreSQL server cannot be reached within the start-up deadline, refuses the login, or the DSN cannot be parsed. A PostgreSQL source that cannot be reached aborts start-up unless ai.remote_clients is optional; then its tools answer TOOL_UNAVAILABLE until a background reconnect succeeds (and passes the read-only check). A missing SQLite file and an unparseable DSN always abort start-up.",
		Fix:     "Build or mount the SQLite file at the path given (relative paths are from the working directory); check the PostgreSQL host, port, credentials and network policy; raise ai.startup_timeout_ms for a slow server.",
		Example: "sql_sources: {warehouse: {driver: sqlite, path: examples/warehouse.db}}   # and the file was never built"},
	{Code: diag.SQLParamUnbound, Phase: diag.PhaseCall,
		Meaning: "A statement parameter is bound from the caller (from: caller.subject or caller.claims.NAME) and the caller does not carry that value, or carries an empty one, or one that is not of the parameter's type. The statement is not run: a missing tenant must never widen a query.",
		Fix:     "Put the value on the caller's identity (heddle.WithCaller in the application; heddle call --as sets caller.subject); declare the parameter required: false only when NULL is a safe value for it.",
		Example: "params: {tenant: {type: string, from: caller.claims.tenant}}   # and the caller has no tenant claim"},
}

var _ grants.Coded = Kind{}
