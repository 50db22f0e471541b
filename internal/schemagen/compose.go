package schemagen

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/heddlehq/heddle/auth"
)

// capability writes config.Capability: one of the kinds' grants, each its
// kind:, the compiler's own defer:, and the settings the kind decodes
// (grant.<kind>, reflected from the kind's settings type).
func (d *document) capability() error {
	deferDesc := d.g.comments.lookup(capabilityType, "Defer")
	var names []string
	var branches []*jsonschema.Schema
	for _, k := range d.g.kinds {
		def := d.defs[d.name(k.settings)]
		if def == nil || def.Properties == nil {
			return fmt.Errorf("schemagen: kind %q: no definition of its settings %s", k.name, k.settings)
		}
		for _, own := range []string{"kind", "defer"} {
			if _, clash := def.Properties.Get(own); clash {
				return fmt.Errorf("schemagen: kind %q has a setting called %s", k.name, own)
			}
		}
		def.Properties.Set("defer", &jsonschema.Schema{Type: "boolean", Description: deferDesc})
		if err := def.Properties.MoveToFront("defer"); err != nil {
			return err
		}
		def.Properties.Set("kind", &jsonschema.Schema{Const: k.name})
		if err := def.Properties.MoveToFront("kind"); err != nil {
			return err
		}
		def.Title = k.name
		def.Required = []string{"kind"}
		names = append(names, k.name)
		branches = append(branches, ref(d.name(k.settings)))
	}
	slices.Sort(names)
	props := jsonschema.NewProperties()
	props.Set("kind", &jsonschema.Schema{
		Type:        "string",
		Description: "The grant's kind: " + strings.Join(names, ", ") + ". Every other key is one of the kind's settings.",
		Enum:        anys(names),
	})
	props.Set("defer", &jsonschema.Schema{Type: "boolean", Description: deferDesc})
	d.defs[capabilityDef] = &jsonschema.Schema{
		Type:        "object",
		Description: d.g.comments.lookup(capabilityType, ""),
		Properties:  props,
		Required:    []string{"kind"},
		OneOf:       branches,
	}
	return nil
}

// authBlock writes config.Auth: one of the registered strategies (auth.<kind>,
// from the settings each declares), or a plugin: any kind that is not one of
// them, with any settings.
func (d *document) authBlock() {
	kinds := d.g.auth.Kinds()
	var branches []*jsonschema.Schema
	for _, k := range kinds {
		s, _ := d.g.auth.Lookup(k)
		d.defs["auth."+k] = d.strategy(s)
		branches = append(branches, ref("auth."+k))
	}
	plugin := openSettings(&jsonschema.Schema{
		Title:       "plugin",
		Description: "A strategy declared under ai.auth_plugins: settings ending in _ref hold secret references, the others plain values, lists of strings or booleans.",
		Type:        "object",
		Required:    []string{"kind"},
	})
	plugin.Properties.Set("kind", &jsonschema.Schema{
		Type:        "string",
		Description: "The name of an entry of ai.auth_plugins.",
		MinLength:   ptr(uint64(1)),
		Not:         &jsonschema.Schema{Enum: anys(kinds)},
	})
	_ = plugin.Properties.MoveToFront("kind")
	d.defs["auth.plugin"] = plugin
	branches = append(branches, ref("auth.plugin"))

	props := jsonschema.NewProperties()
	props.Set("kind", &jsonschema.Schema{
		Type:        "string",
		Description: "The strategy: " + strings.Join(kinds, ", ") + ", or an entry of ai.auth_plugins. Every other key is one of its settings.",
	})
	d.defs[authDef] = &jsonschema.Schema{
		Type:        "object",
		Description: d.g.comments.lookup(authType, ""),
		Properties:  props,
		Required:    []string{"kind"},
		OneOf:       branches,
	}
	d.written[refDef] = true
	d.written[plainDef] = true
}

// strategy is the schema of an auth block of one registered strategy.
func (d *document) strategy(s auth.Strategy) *jsonschema.Schema {
	out := &jsonschema.Schema{
		Title:       s.Kind,
		Description: s.Doc,
		Type:        "object",
		Required:    []string{"kind"},
	}
	if s.AnySettings {
		out = openSettings(out)
	} else {
		out.Properties = jsonschema.NewProperties()
		out.AdditionalProperties = jsonschema.FalseSchema
	}
	out.Properties.Set("kind", &jsonschema.Schema{Const: s.Kind})
	for _, key := range slices.Sorted(maps.Keys(s.Settings)) {
		set := s.Settings[key]
		out.Properties.Set(key, nullable(setting(set)))
		if set.Required {
			out.Required = append(out.Required, key)
		}
	}
	return out
}

// setting is the schema of one declared setting of a strategy.
func setting(set auth.Setting) *jsonschema.Schema {
	var s *jsonschema.Schema
	switch set.Type {
	case auth.RefSetting:
		s = ref(refDef)
	case auth.ListSetting:
		s = &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}}
	case auth.BoolSetting:
		s = &jsonschema.Schema{Type: "boolean"}
	default:
		s = ref(plainDef)
		if len(set.OneOf) > 0 {
			s = &jsonschema.Schema{Type: "string", Enum: anys(set.OneOf)}
		}
	}
	s.Description = set.Doc
	return s
}

// openSettings lets s hold any setting, as the loader takes a plugin's:
// *_ref keys are references; other values plain strings, lists of strings
// or booleans.
func openSettings(s *jsonschema.Schema) *jsonschema.Schema {
	s.Properties = jsonschema.NewProperties()
	s.PatternProperties = map[string]*jsonschema.Schema{"_ref$": nullable(ref(refDef))}
	s.AdditionalProperties = nullable(&jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		ref(plainDef),
		{Type: "array", Items: &jsonschema.Schema{Type: "string"}},
		{Type: "boolean"},
	}})
	return s
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func ptr[T any](v T) *T { return &v }
