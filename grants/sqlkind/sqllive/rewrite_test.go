package sqllive_test

import (
	"slices"
	"testing"

	"github.com/heddlehq/heddle/grants/sqlkind"
	"github.com/heddlehq/heddle/grants/sqlkind/sqllive"
)

func TestRewrite(t *testing.T) {
	params := []sqlkind.Param{{Name: "a", Type: "string"}, {Name: "b", Type: "integer"}}
	tests := []struct {
		sql                    string
		positional, numbered   string
		positionalB, numberedB []int
	}{
		{
			sql:        "SELECT * FROM t WHERE x = :a AND y > :b",
			positional: "SELECT * FROM t WHERE x = ? AND y > ?", positionalB: []int{0, 1},
			numbered: "SELECT * FROM t WHERE x = $1 AND y > $2", numberedB: []int{0, 1},
		},
		{ // a name used twice: two positions, or one number
			sql:        "SELECT :b, :a, :b",
			positional: "SELECT ?, ?, ?", positionalB: []int{1, 0, 1},
			numbered: "SELECT $1, $2, $1", numberedB: []int{1, 0},
		},
		{ // literals, quoted identifiers, comments and casts are left alone
			sql:        `SELECT ':a', ":a", :a::text /* :b */ -- :b` + "\n" + `, :b`,
			positional: `SELECT ':a', ":a", ?::text /* :b */ -- :b` + "\n" + `, ?`, positionalB: []int{0, 1},
			numbered: `SELECT ':a', ":a", $1::text /* :b */ -- :b` + "\n" + `, $2`, numberedB: []int{0, 1},
		},
	}
	for _, tt := range tests {
		spec := &sqlkind.Statement{SQL: tt.sql, Params: params}
		for _, numbered := range []bool{false, true} {
			text, binds, err := sqllive.Rewrite(spec, numbered)
			wantText, wantBinds := tt.positional, tt.positionalB
			if numbered {
				wantText, wantBinds = tt.numbered, tt.numberedB
			}
			if err != nil || text != wantText || !slices.Equal(binds, wantBinds) {
				t.Errorf("Rewrite(%q, numbered %v) = %q %v %v, want %q %v", tt.sql, numbered, text, binds, err, wantText, wantBinds)
			}
		}
	}
	if _, _, err := sqllive.Rewrite(&sqlkind.Statement{SQL: "SELECT :undeclared"}, true); err == nil {
		t.Error("an undeclared placeholder was accepted")
	}
}

func TestCursorable(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT 1":                    true,
		"  select 1":                  true,
		"(SELECT 1) UNION (SELECT 2)": true,
		"-- note\n/* c */ WITH x AS (SELECT 1) SELECT * FROM x": true,
		"VALUES (1)":               true,
		"TABLE incidents":          true,
		"SHOW search_path":         false,
		"EXPLAIN SELECT 1":         false,
		"INSERT INTO t VALUES (1)": false,
		"/* unterminated":          false,
		"":                         false,
		"SELECTx":                  false,
	} {
		if got := sqllive.Cursorable(q); got != want {
			t.Errorf("Cursorable(%q) = %v, want %v", q, got, want)
		}
	}
}
