package sqllive_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	_ "modernc.org/sqlite" // the "sqlite" driver, to build test databases

	"github.com/heddlehq/heddle"
	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds, both halves
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// warehouseSQL is the example schema and rows, shared with the example
// database and the PostgreSQL tests.
func warehouseSQL(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "warehouse", "warehouse.sql"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// buildWarehouse writes the example database to a temporary file.
func buildWarehouse(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "warehouse.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(warehouseSQL(t)); err != nil {
		t.Fatal(err)
	}
	return path
}

func fileHash(t testing.TB, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// compilePlan compiles an api.yaml and agents given as name → agent.yaml.
func compilePlan(t testing.TB, api string, agents map[string]string) *plan.Plan {
	t.Helper()
	return plantest.Must(t, api, agents)
}

// openRuntime compiles and opens; the runtime closes with the test.
func openRuntime(t testing.TB, api string, agents map[string]string, opts runtime.Options) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.Open(context.Background(), compilePlan(t, api, agents), opts)
	if err != nil {
		t.Fatalf("runtime.Open: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

func toolset(t testing.TB, rt *runtime.Runtime, agent string) *runtime.Toolset {
	t.Helper()
	ts, err := rt.Toolset(agent)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// result is a call's structuredContent.
type result struct {
	Columns   []string `json:"columns"`
	Rows      [][]any  `json:"rows"`
	Truncated bool     `json:"truncated"`
}

// call runs one tool and fails the test on a Go error.
func call(t testing.TB, ts *runtime.Toolset, ctx context.Context, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := ts.Call(ctx, tool, args)
	if err != nil {
		t.Fatalf("%s(%v): %v", tool, args, err)
	}
	return res
}

// rows runs one tool that must succeed and returns its structured result.
func rows(t testing.TB, ts *runtime.Toolset, ctx context.Context, tool string, args map[string]any) result {
	t.Helper()
	res := call(t, ts, ctx, tool, args)
	if res.IsError {
		t.Fatalf("%s(%v) failed: %s", tool, args, text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// ids returns the first column of each row as integers.
func (r result) ids() []int {
	out := []int{}
	for _, row := range r.Rows {
		out = append(out, int(row[0].(float64)))
	}
	return out
}

// text concatenates a result's text parts.
func text(res *mcp.CallToolResult) string { return plantest.Text(res) }

func asCaller(tenant string) context.Context {
	c := heddle.Identity{Subject: "alice@example.com"}
	if tenant != "" {
		c.Claims = map[string]string{"tenant": tenant}
	}
	return heddle.WithCaller(context.Background(), c)
}
