// Package canonjson writes JSON in one canonical form, in the manner of RFC
// 8785 (JCS): object keys sorted by their UTF-16 code units, no
// insignificant white space, strings escaped only where JSON requires it
// (no HTML escaping), numbers in their shortest round-trip form. Two values
// that mean the same JSON encode to the same bytes, whatever produced them,
// so that a hash of the encoding is stable across libraries and their
// versions.
//
// It encodes generic values — what encoding/json decodes into an any:
// nil, bool, float64, json.Number, string, []any and map[string]any — and
// anything else by way of its JSON encoding decoded into such values.
package canonjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Marshal returns the canonical encoding of v.
func Marshal(v any) ([]byte, error) {
	g, err := Generic(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := encode(&b, g); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Generic returns v as generic JSON values: v itself when it is one
// already, and otherwise its JSON encoding decoded (numbers as
// json.Number, so that none loses precision).
func Generic(v any) (any, error) {
	if isGeneric(v) {
		return v, nil
	}
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var g any
	if err := d.Decode(&g); err != nil {
		return nil, err
	}
	return g, nil
}

// isGeneric reports a value made only of generic JSON values.
func isGeneric(v any) bool {
	switch v := v.(type) {
	case nil, bool, float64, json.Number, string:
		return true
	case []any:
		for _, e := range v {
			if !isGeneric(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range v {
			if !isGeneric(e) {
				return false
			}
		}
		return true
	}
	return false
}

func encode(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case float64:
		return number(b, v)
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return fmt.Errorf("canonjson: number %s: %w", v, err)
		}
		return number(b, f)
	case string:
		str(b, v)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encode(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			str(b, k)
			b.WriteByte(':')
			if err := encode(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("canonjson: %T is not a generic JSON value", v)
	}
	return nil
}

// number writes f as ECMAScript's Number.prototype.toString does, which is
// what JCS asks for and what encoding/json does too.
func number(b *bytes.Buffer, f float64) error {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("canonjson: %v is not a JSON number", f)
	}
	if f == 0 {
		b.WriteByte('0') // -0 too
		return nil
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	if format == 'e' {
		// 1e-07 → 1e-7
		n := len(s)
		if n >= 4 && s[n-4] == 'e' && s[n-3] == '-' && s[n-2] == '0' {
			s = s[:n-2] + s[n-1:]
		}
	}
	b.WriteString(s)
	return nil
}

// str writes s as a JSON string: only ", \ and control characters are
// escaped; invalid UTF-8 becomes U+FFFD.
func str(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\b':
				b.WriteString(`\b`)
			case c == '\f':
				b.WriteString(`\f`)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c < 0x20:
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\ufffd")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// compareUTF16 orders strings by their UTF-16 code units, as JCS sorts
// object keys.
func compareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}
