// Package sqlkind is the config half of the sql capability kind: named,
// parameterised, read-only statements over a declared source, and — only when
// a grant says so — a free-form read-only query tool.
//
//	capabilities:
//	  - {kind: sql, source: warehouse, statements: [open_incidents], query: false}
//
// Statements are declared in the deployment with typed parameters, written
// as :name in the SQL text; a parameter may be bound from the caller
// (from: caller.claims.tenant) rather than from the model.
package sqlkind

import (
	"maps"
	"slices"
	"strings"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
)

// Kind is the config half of the sql kind. It owns ai.sql_sources.
type Kind struct{}

var _ grants.Kind = Kind{}

// Name is "sql".
func (Kind) Name() string { return "sql" }

// Section is "sql_sources".
func (Kind) Section() string { return "sql_sources" }

// Defaults.
const (
	DefaultTimeoutMS = 5000
	DefaultMaxRows   = 1000
	DefaultMaxBytes  = 1 << 20
)

// configured is the sql kind's view of one deployment.
type configured struct {
	declared map[string]*SourceConfig
	sources  Sources
}

// Drivers are the accepted values of driver.
var Drivers = []string{"sqlite", "postgres"}

// ParamTypes are the accepted parameter types.
var ParamTypes = []string{"string", "integer", "number", "boolean"}

// Configure decodes ai.sql_sources strictly, applies its defaults and
// validates every source and statement.
func (Kind) Configure(env *grants.Env, raw map[string]any) (grants.Configured, diag.Diagnostics) {
	c := &configured{declared: map[string]*SourceConfig{}, sources: Sources{}}
	ds := config.DecodeStrict(raw, &c.declared, "ai.sql_sources")
	optional := env.RemoteClients() == config.RemoteClientsOptional
	for _, name := range slices.Sorted(maps.Keys(c.declared)) {
		s := c.declared[name]
		if s == nil {
			s = &SourceConfig{}
			c.declared[name] = s
		}
		p := config.Join("ai.sql_sources", name)
		sds := s.defaults(env.Deployment, p)
		sds = append(sds, checkSource(s, p)...)
		ps := &Source{
			Name: name, Driver: s.Driver, Path: s.Path, DSNRef: s.DSNRef,
			TimeoutMS: s.TimeoutMS, MaxRows: s.MaxRows, MaxBytes: s.MaxBytes,
			// A local SQLite file is always required; a database server
			// follows ai.remote_clients.
			Required:   s.Driver != "postgres" || !optional,
			Statements: map[string]*Statement{}, GrantedTo: []string{},
		}
		for _, sn := range slices.Sorted(maps.Keys(s.Statements)) {
			st, stds := checkStatement(s.Statements[sn], config.Join(p, "statements", sn))
			sds = append(sds, stds...)
			ps.Statements[sn] = st
		}
		ds = append(ds, sds...)
		if !sds.HasErrors() {
			c.sources[name] = ps
		}
	}
	return c, ds
}

// Part returns the sources, written under "sql_sources"; nothing when the
// deployment declares none.
func (c *configured) Part() (string, any, bool) {
	return "sql_sources", c.sources, len(c.sources) > 0
}

// defaults fills in a source's unset settings and reports numeric ones
// written as zero or less.
func (s *SourceConfig) defaults(d *config.Deployment, p string) diag.Diagnostics {
	ds := config.Positive(nil, d, config.Join(p, "timeout_ms"), s.TimeoutMS)
	ds = config.Positive(ds, d, config.Join(p, "max_rows"), s.MaxRows)
	ds = config.Positive(ds, d, config.Join(p, "max_bytes"), s.MaxBytes)
	if s.TimeoutMS <= 0 {
		s.TimeoutMS = DefaultTimeoutMS
	}
	if s.MaxRows <= 0 {
		s.MaxRows = DefaultMaxRows
	}
	if s.MaxBytes <= 0 {
		s.MaxBytes = DefaultMaxBytes
	}
	return ds
}

func checkSource(s *SourceConfig, p string) diag.Diagnostics {
	var ds diag.Diagnostics
	switch s.Driver {
	case "sqlite":
		if s.Path == "" {
			ds = append(ds, diag.Errorf(diag.SQLSourceInvalid, config.Join(p, "path"), "a sqlite source needs a path"))
		}
		if s.DSNRef != nil {
			ds = append(ds, diag.Errorf(diag.SQLSourceInvalid, config.Join(p, "dsn_ref"), "a sqlite source takes path, not dsn_ref"))
		}
	case "postgres":
		if s.DSNRef == nil {
			ds = append(ds, diag.Errorf(diag.SQLSourceInvalid, config.Join(p, "dsn_ref"), "a postgres source needs dsn_ref"))
		}
		ds = append(ds, grants.CheckRef(s.DSNRef, config.Join(p, "dsn_ref"))...)
		if s.Path != "" {
			ds = append(ds, diag.Errorf(diag.SQLSourceInvalid, config.Join(p, "path"), "a postgres source takes dsn_ref, not path"))
		}
	case "":
		ds = append(ds, diag.Errorf(diag.SQLSourceInvalid, p, "the source names no driver: want %s", strings.Join(Drivers, " or ")))
	default:
		ds = append(ds, diag.Errorf(diag.SQLSourceInvalid, config.Join(p, "driver"), "unknown driver: want %s", strings.Join(Drivers, " or ")))
	}
	return ds
}

func checkStatement(st *StatementConfig, p string) (*Statement, diag.Diagnostics) {
	var ds diag.Diagnostics
	if st == nil || strings.TrimSpace(st.SQL) == "" {
		return nil, diag.Diagnostics{diag.Errorf(diag.SQLStatementInvalid, p, "the statement has no sql")}
	}
	out := &Statement{Description: st.Description, SQL: st.SQL}
	seen := map[string]bool{}
	for _, ph := range Placeholders(st.SQL) {
		if seen[ph.Name] {
			continue
		}
		seen[ph.Name] = true
		decl, ok := st.Params[ph.Name]
		if !ok || decl == nil {
			ds = append(ds, diag.Errorf(diag.SQLStatementInvalid, config.Join(p, "sql"),
				"parameter :%s is used in the SQL but not declared under params", ph.Name))
			continue
		}
		pp := config.Join(p, "params", ph.Name)
		typ := decl.Type
		if typ == "" {
			typ = "string"
		}
		if !slices.Contains(ParamTypes, typ) {
			ds = append(ds, diag.Errorf(diag.SQLStatementInvalid, config.Join(pp, "type"),
				"unknown parameter type: want %s", strings.Join(ParamTypes, ", ")))
		}
		if decl.From != "" && !validFrom(decl.From) {
			ds = append(ds, diag.Errorf(diag.SQLStatementInvalid, config.Join(pp, "from"),
				"from must be caller.subject or caller.claims.<name>"))
		}
		required := decl.Required == nil || *decl.Required
		out.Params = append(out.Params, Param{Name: ph.Name, Type: typ, Description: decl.Description, From: decl.From, Required: required})
	}
	for _, name := range slices.Sorted(maps.Keys(st.Params)) {
		if !seen[name] {
			ds = append(ds, diag.Errorf(diag.SQLStatementInvalid, config.Join(p, "params", name),
				"parameter %q is declared but the SQL never uses :%s", name, name))
		}
	}
	return out, ds
}

func validFrom(from string) bool {
	if from == "caller.subject" {
		return true
	}
	claim, ok := strings.CutPrefix(from, "caller.claims.")
	return ok && claim != "" && !strings.ContainsAny(claim, " \t")
}

type grantSettings struct {
	Source     string   `koanf:"source"`
	Statements []string `koanf:"statements"`
	Query      bool     `koanf:"query"`
}

// Compile resolves one sql grant. A grant that lists no statements grants
// every statement of its source.
func (c *configured) Compile(env *grants.Env, art *config.Artifact, settings map[string]any, p string) (any, diag.Diagnostics) {
	var g grantSettings
	ds := config.DecodeStrict(settings, &g, p)
	src, ok := c.declared[g.Source]
	switch {
	case g.Source == "":
		ds = append(ds, diag.Errorf(diag.SQLSourceUnknown, p, "the grant names no source"))
	case !ok && grants.Written(env.Deployment, "sql_sources", g.Source):
		return nil, ds
	case !ok:
		ds = append(ds, diag.Errorf(diag.SQLSourceUnknown, config.Join(p, "source"),
			"source %q is not declared in ai.sql_sources", g.Source).WithDetail("declared: %s", grants.NameList(slices.Sorted(maps.Keys(c.declared)))))
	}
	if ok && src != nil {
		for i, st := range g.Statements {
			if _, found := src.Statements[st]; !found {
				ds = append(ds, diag.Errorf(diag.SQLStatementUnknown, config.Item(config.Join(p, "statements"), i),
					"source %q declares no statement %q", g.Source, st))
			}
		}
		if len(g.Statements) == 0 && len(src.Statements) == 0 && !g.Query {
			ds = append(ds, diag.Errorf(diag.SQLStatementUnknown, p,
				"the grant gives nothing: source %q declares no statements and query is false", g.Source))
		}
	}
	if ds.HasErrors() {
		return nil, ds
	}
	stmts := g.Statements
	if len(stmts) == 0 && src != nil {
		stmts = slices.Sorted(maps.Keys(src.Statements))
	}
	if ps := c.sources[g.Source]; ps != nil {
		ps.GrantedTo = grants.AppendUnique(ps.GrantedTo, art.Name)
	}
	return &Grant{Source: g.Source, Statements: stmts, Query: g.Query}, ds
}

// GrantSettings and SectionEntry document the types the kind decodes.
func (Kind) GrantSettings() any { return grantSettings{} }
func (Kind) SectionEntry() any  { return SourceConfig{} }

var _ grants.Documented = Kind{}
