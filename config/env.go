package config

import (
	"encoding"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/heddlehq/heddle/diag"
	"go.yaml.in/yaml/v3"
)

// envSections are the top-level keys of a deployment (ai, serve, mcp, …):
// the only ones a HEDDLE_ variable sets. Any other HEDDLE_ variable
// (HEDDLE_TOKEN, HEDDLE_HOME, the ones heddle's own processes pass each
// other) is not configuration, and the loader leaves it alone.
var envSections = knownKeys(reflect.TypeFor[Deployment](), nil)

// envOverlay turns HEDDLE_ variables into a nested map, each variable its
// own index layer (its path and every path within its value) so that a
// diagnostic can name it. A variable whose first segment is not one of
// envSections is skipped, with a debug line on log when there is one.
//
// files is the merged tree of the deployment files, or nil when they could
// not all be read: then nothing is checked against it. A variable that
// would create a map entry the files do not have is refused (refused, one
// CONFIG_KEY_UNKNOWN each) and left out; ds holds the values that cannot be
// read.
func envOverlay(environ []string, files map[string]any, log *slog.Logger) (out map[string]any, layers []layerIndex, ds, refused diag.Diagnostics) {
	out = map[string]any{}
	names := slices.Clone(environ)
	slices.Sort(names)
	for _, kv := range names {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) || len(name) == len(EnvPrefix) {
			continue
		}
		segs := strings.Split(strings.ToLower(strings.TrimPrefix(name, EnvPrefix)), "__")
		if slices.Contains(segs, "") {
			continue
		}
		if !slices.Contains(envSections, segs[0]) {
			if log != nil {
				log.Debug("environment variable ignored: it names no section of the configuration",
					"variable", name, "sections", strings.Join(envSections, ", "))
			}
			continue
		}
		v, vds := parseEnvValue(name, val)
		if vds != nil {
			ds = append(ds, vds...)
			continue
		}
		if files != nil {
			var tree any = v
			for i := len(segs) - 1; i >= 0; i-- {
				tree = map[string]any{segs[i]: tree}
			}
			if rds := newEntries(name, reflect.TypeFor[Deployment](), files, tree, nil); rds != nil {
				refused = append(refused, rds...)
				continue
			}
		}
		cur := out
		for _, s := range segs[:len(segs)-1] {
			next, ok := cur[s].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[s] = next
			}
			cur = next
		}
		cur[segs[len(segs)-1]] = v
		li := layerIndex{file: "$" + name, pos: map[string]pos{}}
		for i := 1; i <= len(segs); i++ {
			li.pos[PathString(segs[:i])] = pos{}
		}
		li.walkValue(segs, v)
		layers = append(layers, li)
	}
	return out, layers, ds, refused
}

// walkValue indexes every path within a variable's value, so that a
// problem inside a mapping or a list it sets (HEDDLE_SERVE__LIMITS=
// '{max_body_bytes: x}') is located at the variable, not at the file that
// wrote the same path below it.
func (li layerIndex) walkValue(path []string, v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			p := append(path[:len(path):len(path)], k)
			li.pos[PathString(p)] = pos{}
			li.walkValue(p, e)
		}
	case []any:
		for i, e := range t {
			p := append(path[:len(path):len(path)], strconv.Itoa(i))
			li.pos[PathString(p)] = pos{}
			li.walkValue(p, e)
		}
	}
}

var aiType = reflect.TypeFor[AI]()

// newEntries refuses every map entry the variable name would create that
// the files do not have. env is what the variable sets, nested under its
// path; files is the files' tree at the same place; t the type config
// decodes it into. A map whose values are mappings (ai.auth_plugins,
// serve.auth.tokens) holds entries, and so does each kind's section of ai
// (ai.mcp_servers, ai.sql_sources, …), which config keeps raw: a variable
// may set what an existing entry holds, never add an entry, nor a section
// the files do not write. Maps of plain values (claims, env) take new keys;
// keys config does not know are left to strict decoding.
func newEntries(name string, t reflect.Type, files, env any, path []string) diag.Diagnostics {
	em, ok := env.(map[string]any)
	if !ok {
		return nil
	}
	fm, _ := files.(map[string]any)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var ds diag.Diagnostics
	switch t.Kind() {
	case reflect.Struct:
		for _, k := range slices.Sorted(maps.Keys(em)) {
			p := append(path[:len(path):len(path)], k)
			if f, ok := fieldByTag(t, k); ok && k != "" {
				ds = append(ds, newEntries(name, f.Type, fm[k], em[k], p)...)
				continue
			}
			if _, isMap := em[k].(map[string]any); t != aiType || !isMap {
				continue
			}
			// A section of ai that a kind owns: a mapping of named entries.
			if fm[k] == nil {
				// The nearest may be a key of ai's own (auth_plugins).
				near := slices.Concat(slices.Sorted(maps.Keys(fm)), AIKeys())
				ds = append(ds, refuseNew(name, p, "section", near, slices.Sorted(maps.Keys(fm))))
				continue
			}
			ds = append(ds, entries(name, nil, fm[k], em[k], p)...)
		}
	case reflect.Map:
		elem := t.Elem()
		for elem.Kind() == reflect.Pointer {
			elem = elem.Elem()
		}
		if isEntry(elem) {
			ds = entries(name, elem, fm, em, path)
		}
	}
	return ds
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// isEntry reports whether t, the type of a map's values, is an entry with
// settings of its own (an auth plugin, a token) rather than a plain value
// (an EnvValue, read from one string).
func isEntry(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(textUnmarshaler) && len(knownKeys(t, nil)) > 0
}

// entries checks the keys env gives a map of named entries against the
// files' (fm); elem is the type of an entry, or nil when a kind decodes it.
func entries(name string, elem reflect.Type, files, env any, path []string) diag.Diagnostics {
	em, ok := env.(map[string]any)
	if !ok {
		return nil
	}
	fm, _ := files.(map[string]any)
	var ds diag.Diagnostics
	for _, k := range slices.Sorted(maps.Keys(em)) {
		p := append(path[:len(path):len(path)], k)
		if fm[k] == nil {
			ds = append(ds, refuseNew(name, p, "entry", slices.Sorted(maps.Keys(fm)), slices.Sorted(maps.Keys(fm))))
			continue
		}
		if elem != nil {
			ds = append(ds, newEntries(name, elem, fm[k], em[k], p)...)
		}
	}
	return ds
}

// refuseNew is the CONFIG_KEY_UNKNOWN of a variable that would create the
// entry (or section) at path: it names the closest of near, or else lists
// have, the keys the files write there, and says why a variable cannot add
// one.
func refuseNew(name string, path []string, what string, near, have []string) diag.Diagnostic {
	parent, got := PathString(path[:len(path)-1]), path[len(path)-1]
	d := diag.Errorf(diag.ConfigKeyUnknown, PathString(path),
		"%s has no %s %q in the files, and a HEDDLE_ variable cannot create one", parent, what, got).
		At(&diag.Range{File: "$" + name})
	c, ok := closest(got, near)
	switch {
	case ok && strings.ToLower(c) == got:
		return d.WithDetail("did you mean %s? No variable can name it: names are lower-cased, so one with upper-case letters is set in a file", c)
	case ok:
		return d.WithDetail("did you mean %s? Correct the variable's name, or write the %s in api.yaml or an overlay", c, what)
	case len(have) == 0:
		return d.WithDetail("the files write nothing in %s: write the %s in api.yaml or an overlay", parent, what)
	}
	list := strings.Join(have, ", ")
	if len(have) > maxListed {
		list = fmt.Sprintf("%s and %d more", strings.Join(have[:maxListed], ", "), len(have)-maxListed)
	}
	return d.WithDetail("%s holds %s: correct the variable's name, or write the %s in api.yaml or an overlay", parent, list, what)
}

// maxListed is how many of the keys written at a place a refusal lists.
const maxListed = 10

// parseEnvValue reads the value of the variable name as a YAML scalar or
// flow collection, held to the limits of a document. A value that is not
// YAML, or is empty or null, is its text.
func parseEnvValue(name, val string) (any, diag.Diagnostics) {
	file := "$" + name
	if len(val) > MaxDocumentBytes {
		return nil, diag.Diagnostics{sizeLimit(file)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(val), &root); err != nil || root.Kind == 0 || len(root.Content) == 0 {
		return val, nil
	}
	v, ds := decodeNode(file, root.Content[0])
	if ds != nil {
		return nil, ds
	}
	if v == nil {
		return val, nil
	}
	return v, nil
}
