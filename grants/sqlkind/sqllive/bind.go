package sqllive

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/sqlkind"
)

// statement is one named statement made ready for one driver: its text with
// every :name placeholder replaced by the driver's bind marker, and the
// parameter whose value goes in each bind position.
type statement struct {
	name string
	spec *sqlkind.Statement
	// text is the rewritten SQL. It contains no value, ever: values travel
	// as bind arguments.
	text string
	// binds[i] is the index in spec.Params of the value of bind position i.
	binds []int
}

// rewrite replaces each :name placeholder of a statement (found by
// sql.Placeholders, which skips literals, quoted identifiers, comments and
// :: casts) by a bind marker. With numbered markers ($1, $2 — PostgreSQL)
// every occurrence of one name shares its number; with positional ones (? —
// SQLite) every occurrence is its own position.
func rewrite(name string, spec *sqlkind.Statement, numbered bool) (*statement, error) {
	index := make(map[string]int, len(spec.Params))
	for i, p := range spec.Params {
		index[p.Name] = i
	}
	st := &statement{name: name, spec: spec}
	var b strings.Builder
	last := 0
	number := map[string]int{}
	for _, ph := range sqlkind.Placeholders(spec.SQL) {
		pi, ok := index[ph.Name]
		if !ok {
			return nil, diag.New(diag.SQLStatementInvalid, "statement %s uses :%s, which it does not declare", name, ph.Name)
		}
		b.WriteString(spec.SQL[last:ph.Start])
		last = ph.End
		if !numbered {
			b.WriteByte('?')
			st.binds = append(st.binds, pi)
			continue
		}
		n, seen := number[ph.Name]
		if !seen {
			st.binds = append(st.binds, pi)
			n = len(st.binds)
			number[ph.Name] = n
		}
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	}
	b.WriteString(spec.SQL[last:])
	st.text = b.String()
	return st, nil
}

// bindArgs returns the bind arguments of one call: each parameter's value,
// from the model's arguments or, for a parameter declared from:, from the
// caller. A caller-bound parameter never reads args, whatever they hold.
func (st *statement) bindArgs(args map[string]any, caller heddle.Identity) ([]any, error) {
	values := make([]any, len(st.spec.Params))
	for i, p := range st.spec.Params {
		v, err := paramValue(st.name, p, args, caller)
		if err != nil {
			return nil, err
		}
		values[i] = v
	}
	out := make([]any, len(st.binds))
	for i, pi := range st.binds {
		out[i] = values[pi]
	}
	return out, nil
}

func paramValue(stmt string, p sqlkind.Param, args map[string]any, caller heddle.Identity) (any, error) {
	if p.From != "" {
		raw, ok := fromCaller(p.From, caller)
		if !ok || raw == "" {
			if !p.Required {
				return nil, nil
			}
			return nil, diag.New(diag.SQLParamUnbound, "%s: parameter %s is bound from %s, which the caller does not carry", stmt, p.Name, p.From)
		}
		v, ok := fromString(p.Type, raw)
		if !ok {
			return nil, diag.New(diag.SQLParamUnbound, "%s: parameter %s is bound from %s, which is not of type %s", stmt, p.Name, p.From, p.Type)
		}
		return v, nil
	}
	raw, ok := args[p.Name]
	if !ok || raw == nil {
		if !p.Required {
			return nil, nil
		}
		return nil, diag.New(diag.ToolArgsInvalid, "%s: the argument %s is required", stmt, p.Name)
	}
	v, ok := convert(p.Type, raw)
	if !ok {
		return nil, diag.New(diag.ToolArgsInvalid, "%s: the argument %s must be of type %s", stmt, p.Name, p.Type)
	}
	return v, nil
}

// fromCaller reads caller.subject or caller.claims.NAME.
func fromCaller(from string, c heddle.Identity) (string, bool) {
	if from == "caller.subject" {
		return c.Subject, c.Subject != ""
	}
	if claim, ok := strings.CutPrefix(from, "caller.claims."); ok {
		v, ok := c.Claims[claim]
		return v, ok
	}
	return "", false
}

// convert checks one model-supplied value against its declared type and
// returns it as the Go type the drivers bind: int64, float64, bool, string.
// The toolset has already validated the arguments against the tool's input
// schema; this is the last line, for callers that bypass it.
func convert(typ string, v any) (any, bool) {
	switch typ {
	case "integer":
		return toInt64(v)
	case "number":
		return toFloat64(v)
	case "boolean":
		b, ok := v.(bool)
		return b, ok
	default: // string
		s, ok := v.(string)
		return s, ok
	}
}

// fromString converts a caller's value (claims are strings) to its type.
func fromString(typ, s string) (any, bool) {
	switch typ {
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	case "number":
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	case "boolean":
		b, err := strconv.ParseBool(s)
		return b, err == nil
	default:
		return s, true
	}
}

func toInt64(v any) (any, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint:
		if uint64(n) > math.MaxInt64 {
			return nil, false
		}
		return int64(n), true
	case uint64:
		if n > math.MaxInt64 {
			return nil, false
		}
		return int64(n), true
	case float32:
		return toInt64(float64(n))
	case float64:
		// 2^63 is exactly representable; anything at or past it is not an int64.
		if n != math.Trunc(n) || n < -(1<<63) || n >= 1<<63 {
			return nil, false
		}
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return nil, false
}

func toFloat64(v any) (any, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsInf(n, 0) && !math.IsNaN(n)
	case float32:
		return toFloat64(float64(n))
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	if i, ok := toInt64(v); ok {
		return float64(i.(int64)), true
	}
	return nil, false
}

// inputSchema is a statement tool's input: its parameters that are not
// bound from the caller. Extra properties are refused, so a model that
// tries to pass a caller-bound parameter reads TOOL_ARGS_INVALID rather than
// believing it set it.
func inputSchema(spec *sqlkind.Statement) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, p := range spec.Params {
		if p.From != "" {
			continue
		}
		prop := map[string]any{"type": p.Type}
		if p.Description != "" {
			prop["description"] = p.Description
		}
		props[p.Name] = prop
		if p.Required {
			required = append(required, p.Name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}
