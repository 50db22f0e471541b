package usecase

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/heddlehq/heddle/diag"
)

// Operation is one registered use case. It is immutable once registered and
// safe for concurrent use.
type Operation struct {
	key         string
	description string
	annotations Annotations
	input       *jsonschema.Schema
	output      *jsonschema.Schema // nil when Out is not an object
	mcpUses     []MCPUse
	invoke      func(ctx context.Context, args map[string]any) (any, error)
}

// Key returns the key artifacts grant the operation by.
func (o *Operation) Key() string { return o.key }

// Description returns the operation's description.
func (o *Operation) Description() string { return o.description }

// InputSchema returns the JSON Schema of the operation's arguments, derived
// from its In type: always an object. It is shared and must not be
// modified.
func (o *Operation) InputSchema() *jsonschema.Schema { return o.input }

// OutputSchema returns the JSON Schema of the operation's output, derived
// from its Out type, when that is an object; otherwise nil (the output is
// returned as text only). It is shared and must not be modified.
func (o *Operation) OutputSchema() *jsonschema.Schema { return o.output }

// Annotations returns what the operation's options say about its effects.
// Each call returns a new value.
func (o *Operation) Annotations() Annotations {
	a := o.annotations
	if a.Destructive != nil {
		d := *a.Destructive
		a.Destructive = &d
	}
	return a
}

// MCPUses returns the MCP servers the operation reaches directly (WithMCP).
func (o *Operation) MCPUses() []MCPUse {
	out := make([]MCPUse, len(o.mcpUses))
	for i, u := range o.mcpUses {
		out[i] = MCPUse{Server: u.Server, Include: slices.Clone(u.Include)}
	}
	return out
}

// StructuredOutput reports whether the operation's output is a JSON object,
// and so may be returned as a result's structuredContent.
func (o *Operation) StructuredOutput() bool { return o.output != nil }

// Invoke decodes args strictly into the operation's input type — an unknown
// field, or a value of the wrong type, is a TOOL_ARGS_INVALID error — and
// calls the operation with ctx. It returns the operation's output (of its
// Out type) or its error, unchanged. Nil args are an empty object.
//
// Decoding gives what encoding/json gives for the arguments' JSON form with
// DisallowUnknownFields (including its case-insensitive match of field
// names), without encoding them for the common input types (see decode.go).
// Invoke does not validate args against the input schema — required
// fields, exact names, enums, bounds —: the toolset does that before it
// calls. Nor does it recover a panic of the operation; grants/usecasekind/usecaselive
// does.
func (o *Operation) Invoke(ctx context.Context, args map[string]any) (any, error) {
	return o.invoke(ctx, args)
}

var (
	mu  sync.RWMutex
	ops = map[string]*Operation{}
)

// Register records fn as the operation granted by key. In is the type the
// tool's arguments decode into; its JSON Schema, derived as go-sdk's typed
// tools derive theirs (github.com/google/jsonschema-go: json field names,
// jsonschema tags as descriptions, omitempty/omitzero fields optional, no
// other properties allowed), is the tool's input schema and must describe an
// object. Out's schema is the tool's output schema when it is an object.
//
// Register panics on an empty key, a key already registered, a nil fn, a
// type no schema can be derived for, an input schema that is not an object,
// and contradictory options: they are programming errors. It is safe to
// call concurrently, though applications call it from init or main.
func Register[In, Out any](key string, fn func(ctx context.Context, in In) (Out, error), opts ...Option) {
	if strings.TrimSpace(key) == "" || strings.ContainsAny(key, " \t\r\n") {
		panic(fmt.Sprintf("usecase: Register(%q): the key must be non-empty with no white space", key))
	}
	if fn == nil {
		panic(fmt.Sprintf("usecase: Register(%q) with a nil function", key))
	}
	var c config
	for _, o := range opts {
		o(&c)
	}
	if err := c.check(); err != nil {
		panic(fmt.Sprintf("usecase: Register(%q): %v", key, err))
	}
	in, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("usecase: Register(%q): input schema: %v", key, err))
	}
	if in.Type != "object" {
		panic(fmt.Sprintf("usecase: Register(%q): the input type must be a struct or map (its schema type is %q, not \"object\")", key, schemaType(in)))
	}
	if _, err := in.Resolve(nil); err != nil {
		panic(fmt.Sprintf("usecase: Register(%q): input schema: %v", key, err))
	}
	var out *jsonschema.Schema
	if s, err := jsonschema.For[Out](nil); err != nil {
		panic(fmt.Sprintf("usecase: Register(%q): output schema: %v", key, err))
	} else if s.Type == "object" {
		out = s
	}
	op := &Operation{
		key:         key,
		description: c.description,
		annotations: c.annotations(),
		input:       in,
		output:      out,
		mcpUses:     c.mcp,
	}
	dec := newArgsDecoder[In]()
	op.invoke = func(ctx context.Context, args map[string]any) (any, error) {
		v, err := dec.decode(args)
		if err != nil {
			return nil, diag.New(diag.ToolArgsInvalid, "the arguments do not fit use case %s: %s", key, err)
		}
		return fn(ctx, v)
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := ops[key]; dup {
		panic(fmt.Sprintf("usecase: %q registered twice", key))
	}
	ops[key] = op
}

// Lookup returns the operation registered under key.
func Lookup(key string) (*Operation, bool) {
	mu.RLock()
	defer mu.RUnlock()
	op, ok := ops[key]
	return op, ok
}

// Keys returns the keys of every registered operation, sorted: what
// compile.Input.Usecases wants.
func Keys() []string {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Sorted(maps.Keys(ops))
}

// MCPUses returns the MCP servers registered operations reach directly
// (WithMCP): one entry per server and filter, sorted by server. The
// built-in set of kinds (package builtin) hands them to the mcp kind, which
// opens them (mcplive.Kind.Uses).
func MCPUses() []MCPUse {
	mu.RLock()
	defer mu.RUnlock()
	var out []MCPUse
	seen := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(ops)) {
		for _, u := range ops[key].mcpUses {
			id := u.Server + "\x00" + strings.Join(u.Include, "\x00")
			if seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, MCPUse{Server: u.Server, Include: slices.Clone(u.Include)})
		}
	}
	slices.SortStableFunc(out, func(a, b MCPUse) int { return strings.Compare(a.Server, b.Server) })
	return out
}

func schemaType(s *jsonschema.Schema) string {
	if s.Type != "" {
		return s.Type
	}
	return strings.Join(s.Types, ",")
}
