package config

import (
	"reflect"
	"strings"
)

// maxBracketTries bounds the closing brackets fieldPath tries for one map
// key, so that a key full of ']' costs no more than a plain one.
const maxBracketTries = 16

// fieldPath splits a field name of the decoder's (ai.mcp_servers[run.books].url)
// into config path segments. The name alone is ambiguous, since a key may
// hold '.', '[' or ']' (and an unknown key ends the name however it is
// spelt), so it is read along t, the Go type decoded into, whose struct
// fields have plain names, and in, the value decoded from, whose map keys
// say where a bracketed key ends. A name it cannot follow is split as
// [SplitPath] does.
func fieldPath(t reflect.Type, in any, name string) []string {
	var segs []string
	rest := name
	for first := true; rest != ""; first = false {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == nil {
			return append(segs, SplitPath(rest)...)
		}
		switch t.Kind() {
		case reflect.Struct:
			if !first {
				if rest[0] != '.' {
					return append(segs, SplitPath(rest)...)
				}
				rest = rest[1:]
			}
			if m, ok := in.(map[string]any); ok {
				if _, whole := m[rest]; whole {
					// A key such as "policies.approval": the name ends
					// with a key the input holds, however it is spelt.
					return append(segs, rest)
				}
			}
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			f, ok := fieldByTag(t, rest[:end])
			if !ok || rest[:end] == "" {
				// Not a field: the key nobody knows, which is all the rest.
				return append(segs, rest)
			}
			segs = append(segs, rest[:end])
			in = entry(in, rest[:end])
			t, rest = f.Type, rest[end:]
		case reflect.Map, reflect.Slice, reflect.Array:
			key, after, ok := bracketed(in, rest)
			if !ok {
				return append(segs, SplitPath(rest)...)
			}
			segs = append(segs, key)
			in = entry(in, key)
			t, rest = t.Elem(), after
		default:
			return append(segs, SplitPath(rest)...)
		}
	}
	return segs
}

// bracketed reads "[key]" at the start of rest, where key is a key of the
// map in (or an index of the list in), and returns it and what follows.
func bracketed(in any, rest string) (key, after string, ok bool) {
	if rest == "" || rest[0] != '[' {
		return "", "", false
	}
	m, isMap := in.(map[string]any)
	end := 0
	for try := 0; try < maxBracketTries; try++ {
		i := strings.IndexByte(rest[end+1:], ']')
		if i < 0 {
			return "", "", false
		}
		end += 1 + i
		key, after = rest[1:end], rest[end+1:]
		if after != "" && after[0] != '.' && after[0] != '[' {
			continue
		}
		if !isMap {
			return key, after, true // a list, or nothing to check against
		}
		if _, found := m[key]; found {
			return key, after, true
		}
	}
	return "", "", false
}

// entry returns the value at key of the map or list v, or nil.
func entry(v any, key string) any {
	switch t := v.(type) {
	case map[string]any:
		return t[key]
	case []any:
		for i, c := 0, 0; i < len(key); i++ {
			if key[i] < '0' || key[i] > '9' {
				return nil
			}
			if c = c*10 + int(key[i]-'0'); c >= len(t) {
				return nil
			}
			if i == len(key)-1 {
				return t[c]
			}
		}
	}
	return nil
}
