package sqlkind

import (
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/plan"
)

// SourceConfig is one entry of ai.sql_sources as written.
type SourceConfig struct {
	// Driver is sqlite or postgres.
	Driver string `koanf:"driver"`
	// Path is the SQLite database file (opened read-only).
	Path string `koanf:"path"`
	// DSNRef references the PostgreSQL connection string.
	DSNRef     *config.Ref                 `koanf:"dsn_ref"`
	TimeoutMS  int                         `koanf:"timeout_ms"`
	MaxRows    int                         `koanf:"max_rows"`
	MaxBytes   int                         `koanf:"max_bytes"`
	Statements map[string]*StatementConfig `koanf:"statements"`
}

// StatementConfig is a named, parameterised, read-only statement as written.
type StatementConfig struct {
	Description string                  `koanf:"description"`
	SQL         string                  `koanf:"sql"`
	Params      map[string]*ParamConfig `koanf:"params"`
}

// ParamConfig is one parameter of a statement as written.
type ParamConfig struct {
	// Type is string, integer, number or boolean.
	Type        string `koanf:"type"`
	Description string `koanf:"description"`
	// From binds the value from the caller ("caller.subject", "caller.claims.NAME")
	// instead of from the model; such a parameter is not part of the tool's input.
	From     string `koanf:"from"`
	Required *bool  `koanf:"required"`
}

// Sources is the sql kind's part of the plan, keyed by source name.
type Sources map[string]*Source

// Source is one database an sql grant reads.
type Source struct {
	Name      string      `json:"-"`
	Driver    string      `json:"driver"`
	Path      string      `json:"path,omitempty"`
	DSNRef    *config.Ref `json:"dsn_ref,omitempty"`
	TimeoutMS int         `json:"timeout_ms"`
	MaxRows   int         `json:"max_rows"`
	MaxBytes  int         `json:"max_bytes"`
	// Required says whether a source that cannot be opened aborts start-up.
	Required   bool                  `json:"required"`
	Statements map[string]*Statement `json:"statements"`
	GrantedTo  []string              `json:"granted_to"`
}

// Statement is one named, parameterised statement.
type Statement struct {
	Description string `json:"description,omitempty"`
	SQL         string `json:"sql"`
	// Params are in the order they appear in the SQL text.
	Params []Param `json:"params,omitempty"`
}

// Param is one statement parameter.
type Param struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	From        string `json:"from,omitempty"`
	Required    bool   `json:"required"`
}

// Grant is an sql grant's plan spec: named statements of one source, and
// optionally free-form read-only queries.
type Grant struct {
	Source     string   `json:"source"`
	Statements []string `json:"statements,omitempty"`
	Query      bool     `json:"query"`
}

// PlanSources returns the sources of p, or nil when p has no sql part.
func PlanSources(p *plan.Plan) Sources {
	s, _ := p.Part("sql").(Sources)
	return s
}
