package sqllive

import (
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// limits caps one result.
type limits struct {
	rows  int // at most this many rows
	bytes int // at most about this many bytes of row data, as JSON
}

// table is one statement's result.
type table struct {
	Columns   []string
	Rows      [][]any
	Truncated bool
	// cause says which cap truncated the result: "max_rows" or "max_bytes".
	cause string
}

// readRows reads at most lim.rows rows and about lim.bytes bytes of data,
// and stops there: it reads one row past max_rows only to know whether the
// result was cut, and never drains the rest (the caller closes rows, which
// for SQLite resets the statement and for a PostgreSQL cursor leaves the
// unread rows unfetched). With typed, columns of type json and jsonb are
// kept as JSON rather than as text.
func readRows(rows *sql.Rows, lim limits, typed bool) (*table, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	jsonCol := make([]bool, len(cols))
	if typed {
		types, err := rows.ColumnTypes()
		if err != nil {
			return nil, err
		}
		for i, t := range types {
			switch strings.ToUpper(t.DatabaseTypeName()) {
			case "JSON", "JSONB":
				jsonCol[i] = true
			}
		}
	}
	t := &table{Columns: cols, Rows: [][]any{}}
	raw := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	size := 2 // []
	for rows.Next() {
		if len(t.Rows) >= lim.rows {
			t.Truncated, t.cause = true, "max_rows"
			break
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]any, len(cols))
		n := 3 // [], and a comma
		for i, v := range raw {
			row[i] = jsonValue(v, jsonCol[i])
			n += valueSize(row[i]) + 1
		}
		if size+n > lim.bytes {
			t.Truncated, t.cause = true, "max_bytes"
			break
		}
		size += n
		t.Rows = append(t.Rows, row)
	}
	if t.Truncated {
		return t, nil
	}
	return t, rows.Err()
}

// jsonValue turns a driver value into one JSON represents faithfully.
func jsonValue(v any, isJSON bool) any {
	switch x := v.(type) {
	case nil, bool, int64, string:
		return x
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return x
	case []byte:
		if isJSON && json.Valid(x) {
			return json.RawMessage(append([]byte(nil), x...))
		}
		if utf8.Valid(x) {
			return string(x)
		}
		return "base64:" + base64.StdEncoding.EncodeToString(x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case json.RawMessage:
		return x
	case fmt.Stringer:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}

// valueSize estimates a value's JSON size, cheaply: escapes are not counted.
func valueSize(v any) int {
	switch x := v.(type) {
	case nil:
		return 4
	case bool:
		return 5
	case int64:
		return len(strconv.FormatInt(x, 10))
	case float64:
		return len(strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		return len(x) + 2
	case json.RawMessage:
		return len(x)
	default:
		return len(fmt.Sprint(x)) + 2
	}
}

// toolResult renders a table as structuredContent and as compact text: a
// tab-separated header and rows (NULL for null; tabs, newlines and
// backslashes escaped), then a line with the row count and, when the result
// was cut, which cap cut it.
func (t *table) toolResult(lim limits) *mcp.CallToolResult {
	var b strings.Builder
	b.WriteString(strings.Join(escapeCells(t.Columns), "\t"))
	b.WriteByte('\n')
	for _, row := range t.Rows {
		for i, v := range row {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(cellText(v))
		}
		b.WriteByte('\n')
	}
	noun := "rows"
	if len(t.Rows) == 1 {
		noun = "row"
	}
	switch t.cause {
	case "max_rows":
		fmt.Fprintf(&b, "(%d %s; truncated at max_rows %d: narrow the query)", len(t.Rows), noun, lim.rows)
	case "max_bytes":
		fmt.Fprintf(&b, "(%d %s; truncated at max_bytes %d: select fewer columns or rows)", len(t.Rows), noun, lim.bytes)
	default:
		fmt.Fprintf(&b, "(%d %s)", len(t.Rows), noun)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: b.String()}},
		StructuredContent: map[string]any{"columns": t.Columns, "rows": t.Rows, "truncated": t.Truncated},
	}
}

var cellEscaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)

func escapeCells(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = cellEscaper.Replace(s)
	}
	return out
}

func cellText(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return cellEscaper.Replace(x)
	case json.RawMessage:
		return cellEscaper.Replace(string(x))
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	default:
		return cellEscaper.Replace(fmt.Sprint(x))
	}
}
