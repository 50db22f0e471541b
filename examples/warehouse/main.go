// Command warehouse builds the example SQLite database the shipped
// deployment's sql source reads (ai.sql_sources.warehouse, path
// examples/warehouse.db) from warehouse.sql:
//
//	go run ./examples/warehouse -o examples/warehouse.db
//
// It is idempotent: it builds a fresh database next to the output, and
// replaces the output (atomically, by rename) only when the content
// differs, so a second run leaves the file as it was.
package main

import (
	"bytes"
	"context"
	"database/sql"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite"
)

//go:embed warehouse.sql
var schema string

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("warehouse", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "examples/warehouse.db", "the database file to write")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	changed, err := build(context.Background(), *out)
	if err != nil {
		fmt.Fprintf(stderr, "warehouse: %v\n", err)
		return 1
	}
	if changed {
		fmt.Fprintf(stdout, "wrote %s\n", *out)
	} else {
		fmt.Fprintf(stdout, "%s is up to date\n", *out)
	}
	return 0
}

// build writes the database to path unless an identical one is there, and
// reports whether it wrote.
func build(ctx context.Context, path string) (bool, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(dir, ".warehouse-*.db")
	if err != nil {
		return false, err
	}
	name := tmp.Name()
	tmp.Close()
	defer os.Remove(name) // a no-op after the rename
	if err := fill(ctx, name); err != nil {
		return false, err
	}
	fresh, err := os.ReadFile(name)
	if err != nil {
		return false, err
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, fresh) {
		return false, nil
	}
	if err := os.Chmod(name, 0o644); err != nil {
		return false, err
	}
	return true, os.Rename(name, path)
}

// fill runs warehouse.sql on an empty database file.
func fill(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(DELETE)")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("warehouse.sql: %w", err)
	}
	return db.Close()
}
