// Package schemagen writes the JSON Schemas (draft 2020-12) that editors
// check heddle's configuration with: schema/api.schema.json for
// config/api.yaml and its overlays, schema/agent.schema.json for
// agents/<name>/agent.yaml. They are generated, never written by hand, from
// the Go types the loader decodes into — config.Deployment and
// config.Artifact, and for every built-in kind the types it says it decodes
// (grants.Documented): one entry of its ai.<section>, and its grants'
// settings — and from the auth strategies' declared settings.
//
//	api, agent, err := schemagen.Generate(".") // at the module root
//
// `make docs` runs the command in ./cmd, which writes both files; a test of
// this package fails when they are stale.
//
// The schemas say what the loader says. An object is closed
// (additionalProperties: false) wherever decoding refuses an unknown key,
// which is everywhere but the settings of an auth plugin. A capability is one
// of the kinds' grants, told apart by kind:, and an auth: block one of the
// strategies, or any kind that is not built in (a plugin declared under
// ai.auth_plugins, with any settings). Secret references and env values are
// strings held to the syntax config accepts. Every value in a mapping may be
// null, which removes the key, as an overlay writes it. Keys are described by
// their fields' doc comments.
package schemagen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/heddlehq/heddle/auth"
	"github.com/heddlehq/heddle/builtin"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/grants"
)

// Where the schemas live, relative to the module root.
const (
	APIFile   = "schema/api.schema.json"
	AgentFile = "schema/agent.schema.json"
)

// Generate returns the schemas of api.yaml and agent.yaml for the built-in
// kinds and auth strategies, indented JSON ending in a newline. root is the
// module root, whose Go files the descriptions are read from.
func Generate(root string) (api, agent []byte, err error) {
	g, err := newGenerator(root, builtin.Default().Grants(), auth.Default())
	if err != nil {
		return nil, nil, err
	}
	if api, err = g.api(); err != nil {
		return nil, nil, err
	}
	if agent, err = g.agent(); err != nil {
		return nil, nil, err
	}
	return api, agent, nil
}

var (
	deploymentType = reflect.TypeFor[config.Deployment]()
	artifactType   = reflect.TypeFor[config.Artifact]()
	aiType         = reflect.TypeFor[config.AI]()
	refType        = reflect.TypeFor[config.Ref]()
	envValueType   = reflect.TypeFor[config.EnvValue]()
	authType       = reflect.TypeFor[config.Auth]()
	capabilityType = reflect.TypeFor[config.Capability]()

	// settingPkg is the import path of package setting, which declares
	// config.Ref and the other types config re-exports.
	settingPkg = refType.PkgPath()
)

// kind is one capability kind and the Go types it decodes.
type kind struct {
	name, section string
	entry         reflect.Type // one entry of ai.<section>; nil without a section
	settings      reflect.Type // a grant's settings
}

type generator struct {
	kinds    []kind
	auth     *auth.Registry
	comments *comments
}

func newGenerator(root string, set *grants.Set, reg *auth.Registry) (*generator, error) {
	g := &generator{auth: reg, comments: newComments(root, path.Dir(deploymentType.PkgPath()))}
	seen := map[reflect.Type]string{}
	for _, k := range set.Kinds() {
		d, ok := k.(grants.Documented)
		if !ok {
			return nil, fmt.Errorf("kind %q does not implement grants.Documented: its schema cannot be known", k.Name())
		}
		kd := kind{name: k.Name(), section: k.Section(), settings: structType(d.GrantSettings())}
		if kd.settings == nil {
			return nil, fmt.Errorf("kind %q: GrantSettings returns no struct", k.Name())
		}
		if other, dup := seen[kd.settings]; dup {
			return nil, fmt.Errorf("kinds %q and %q share the settings type %s", other, k.Name(), kd.settings)
		}
		seen[kd.settings] = k.Name()
		if kd.section != "" {
			if kd.entry = structType(d.SectionEntry()); kd.entry == nil {
				return nil, fmt.Errorf("kind %q owns ai.%s but SectionEntry returns no struct", k.Name(), kd.section)
			}
		}
		g.kinds = append(g.kinds, kd)
	}
	return g, nil
}

func structType(v any) reflect.Type {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	return t
}

// api is the schema of api.yaml: config's own keys of ai:, and one key per
// kind's section, each a mapping of names to the kind's entries.
func (g *generator) api() ([]byte, error) {
	d := g.document()
	d.add(deploymentType)
	entries := map[string]*jsonschema.Schema{}
	for _, k := range g.kinds {
		if k.section != "" {
			entries[k.section] = d.add(k.entry)
		}
	}
	if err := d.prepare(); err != nil {
		return nil, err
	}
	ai := d.defs[d.name(aiType)]
	for _, k := range g.kinds {
		if k.section == "" {
			continue
		}
		ai.Properties.Set(k.section, nullable(&jsonschema.Schema{
			Type:                 "object",
			Description:          fmt.Sprintf("The %s kind's section: entries by name.", k.name),
			AdditionalProperties: nullable(entries[k.section]),
		}))
	}
	return d.marshal(deploymentType, "heddle deployment: config/api.yaml and its overlays, config/api.<env>.yaml")
}

// agent is the schema of agent.yaml: its capabilities are the kinds'
// grants, told apart by kind:.
func (g *generator) agent() ([]byte, error) {
	d := g.document()
	for _, k := range g.kinds {
		d.names[k.settings] = "grant." + k.name
	}
	d.add(artifactType)
	for _, k := range g.kinds {
		d.add(k.settings)
	}
	if err := d.prepare(); err != nil {
		return nil, err
	}
	return d.marshal(artifactType, "heddle agent: agents/<name>/agent.yaml")
}

// document is one schema being built: the definitions reflected from Go
// types, and the ones this package writes, made when a type refers to them.
type document struct {
	g       *generator
	defs    jsonschema.Definitions
	names   map[reflect.Type]string // definition names other than package.Type
	roots   []reflect.Type
	written map[string]bool // definitions of this package's own that are referred to
}

func (g *generator) document() *document {
	return &document{g: g, defs: jsonschema.Definitions{}, names: map[reflect.Type]string{}, written: map[string]bool{}}
}

// name is the definition name of t: package.Type (config.AI,
// mcpkind.ServerConfig), or a name given in d.names. A type package setting
// declares is named config.Type: config re-exports it under that name, and
// the loader decodes it as config's.
func (d *document) name(t reflect.Type) string {
	if n, ok := d.names[t]; ok {
		return n
	}
	if t.Name() == "" || t.PkgPath() == "" {
		return ""
	}
	pkg := path.Base(t.PkgPath())
	if t.PkgPath() == settingPkg {
		pkg = path.Base(deploymentType.PkgPath())
	}
	return pkg + "." + t.Name()
}

func (d *document) reflector() *jsonschema.Reflector {
	return &jsonschema.Reflector{
		FieldNameTag:               "koanf",
		RequiredFromJSONSchemaTags: true, // the loader requires no key
		Anonymous:                  true,
		Namer:                      d.name,
		Mapper:                     d.mapped,
		LookupComment:              d.g.comments.lookup,
	}
}

// add reflects the struct type t into d's definitions and returns a
// reference to its definition.
func (d *document) add(t reflect.Type) *jsonschema.Schema {
	s := d.reflector().ReflectFromType(t)
	for name, def := range s.Definitions {
		if _, ok := d.defs[name]; !ok {
			d.defs[name] = def
		}
	}
	d.roots = append(d.roots, t)
	return &jsonschema.Schema{Ref: s.Ref}
}

// mapped gives the schema of the types that are not decoded field by field:
// values decoded from text, and the blocks whose keys depend on their kind.
func (d *document) mapped(t reflect.Type) *jsonschema.Schema {
	var def string
	switch t {
	case refType:
		def = refDef
	case envValueType:
		def = envValueDef
	case authType:
		def = authDef
	case capabilityType:
		def = capabilityDef
	default:
		if reflect.PointerTo(t).Implements(textUnmarshaler) {
			return &jsonschema.Schema{Type: "string"}
		}
		return nil
	}
	d.written[def] = true
	return ref(def)
}

// prepare finishes the reflected definitions: it drops the fields that hold
// the keys a struct does not decode itself, names what an env map's keys
// must be, lets every value in a mapping be null, and writes this
// package's own definitions.
func (d *document) prepare() error {
	if err := d.dropRemain(); err != nil {
		return err
	}
	for _, def := range d.defs {
		walk(def, func(s *jsonschema.Schema) {
			if ap := s.AdditionalProperties; ap != nil && ap.Ref == ref(envValueDef).Ref {
				s.PropertyNames = envNames()
			}
		})
	}
	for _, def := range d.defs {
		nullValues(def)
	}
	return d.writeOwn()
}

// dropRemain removes the ",remain" fields the reflector took for keys:
// config.AI's holds the kinds' sections, which api adds. Any other struct
// with one would accept keys this package cannot know.
func (d *document) dropRemain() error {
	seen := map[reflect.Type]bool{}
	var errs []string
	for _, root := range d.roots {
		structs(root, seen, func(t reflect.Type) {
			for i := range t.NumField() {
				f := t.Field(i)
				if !remain(f) {
					continue
				}
				if t != aiType {
					errs = append(errs, fmt.Sprintf("%s.%s holds keys %s does not decode itself, which the schema cannot describe", t, f.Name, t))
					continue
				}
				d.defs[d.name(t)].Properties.Delete(f.Name)
			}
		})
	}
	if errs != nil {
		return fmt.Errorf("schemagen: %s", strings.Join(errs, "; "))
	}
	return nil
}

// structs calls fn on every struct type reachable from t through fields,
// pointers, maps and lists, except the types mapped does not reflect.
func structs(t reflect.Type, seen map[reflect.Type]bool, fn func(reflect.Type)) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Map || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || reflect.PointerTo(t).Implements(textUnmarshaler) || t == authType || t == capabilityType {
		return
	}
	seen[t] = true
	fn(t)
	for i := range t.NumField() {
		if f := t.Field(i); keyOf(f) != "" {
			structs(f.Type, seen, fn)
		}
	}
}

// writeOwn adds the definitions of this package's own that the document
// refers to, and those they refer to in turn.
func (d *document) writeOwn() error {
	for len(d.written) > 0 {
		name := slices.Sorted(maps.Keys(d.written))[0]
		delete(d.written, name)
		if _, done := d.defs[name]; done {
			continue
		}
		c := d.g.comments
		switch name {
		case refDef:
			d.defs[name] = refSchema(c.lookup(refType, ""))
		case envValueDef:
			d.defs[name] = envValueSchema(c.lookup(envValueType, ""))
			d.written[refDef] = true
		case plainDef:
			d.defs[name] = plainSchema()
		case authDef:
			d.authBlock()
		case capabilityDef:
			if err := d.capability(); err != nil {
				return err
			}
		}
	}
	return d.g.comments.err
}

// marshal writes the document whose root is t's definition.
func (d *document) marshal(t reflect.Type, title string) ([]byte, error) {
	name := d.name(t)
	root := *d.defs[name]
	delete(d.defs, name)
	root.Version = jsonschema.Version
	root.Title = title
	root.Comments = "Generated from the Go types heddle's loader decodes into (go run ./internal/schemagen/cmd, or make docs); do not edit."
	// The definitions go last, after what the document itself says.
	head, err := json.Marshal(&root)
	if err != nil {
		return nil, err
	}
	defs, err := json.Marshal(d.defs)
	if err != nil {
		return nil, err
	}
	doc := append(head[:len(head)-1:len(head)-1], `,"$defs":`...)
	doc = append(append(doc, defs...), '}')
	var b bytes.Buffer
	if err := json.Indent(&b, doc, "", "  "); err != nil {
		return nil, err
	}
	return unescapeHTML(b.Bytes())
}

// unescapeHTML undoes encoding/json's escaping of <, > and & (descriptions
// say <name>), and checks that the document still means the same.
func unescapeHTML(b []byte) ([]byte, error) {
	out := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b))
	var before, after any
	if err := json.Unmarshal(b, &before); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(out), &after); err != nil || !reflect.DeepEqual(before, after) {
		return nil, fmt.Errorf("schemagen: unescaping the schema changed it")
	}
	return append([]byte(out), '\n'), nil
}
