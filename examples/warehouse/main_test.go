package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestCommittedDatabaseIsFresh builds the warehouse from warehouse.sql and
// compares it with the committed examples/warehouse.db, which the shipped
// example deployment reads: the two must not drift apart.
func TestCommittedDatabaseIsFresh(t *testing.T) {
	out := filepath.Join(t.TempDir(), "warehouse.db")
	if _, err := build(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../warehouse.db")
	if err != nil {
		t.Fatalf("%v; run: go run ./examples/warehouse -o examples/warehouse.db", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("examples/warehouse.db is stale; run: go run ./examples/warehouse -o examples/warehouse.db")
	}
}
