package sqllive_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/runtime"
)

// BenchmarkSQLiteStatement is one named statement per call through an
// agent's toolset: policy, schema validation, binding, the read-only
// connection, rows to structuredContent and text.
func BenchmarkSQLiteStatement(b *testing.B) {
	path := buildWarehouse(b)
	rt := openRuntime(b, strings.ReplaceAll(sqliteAPI, "$DB", path),
		map[string]string{"analyst": `capabilities: [{kind: sql, source: warehouse, statements: [open_incidents]}]`}, runtime.Options{})
	ts := toolset(b, rt, "analyst")
	ctx := context.Background()
	args := map[string]any{"min_severity": 4}
	b.ReportAllocs()
	for b.Loop() {
		res, err := ts.Call(ctx, "open_incidents", args)
		if err != nil || res.IsError {
			b.Fatalf("%v %v", res, err)
		}
	}
}

// BenchmarkSQLiteRaw is the same query through database/sql alone, for
// comparison.
func BenchmarkSQLiteRaw(b *testing.B) {
	path := buildWarehouse(b)
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=query_only(1)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	const q = "SELECT id, title, severity FROM incidents WHERE status = 'open' AND severity >= ? ORDER BY id"
	b.ReportAllocs()
	for b.Loop() {
		rows, err := db.QueryContext(ctx, q, 4)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id, severity int64
			var title string
			if err := rows.Scan(&id, &title, &severity); err != nil {
				b.Fatal(err)
			}
			n++
		}
		rows.Close()
		if n != 4 {
			b.Fatalf("%d rows", n)
		}
	}
}
