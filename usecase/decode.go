package usecase

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
)

// Arguments arrive as a map decoded from the model's JSON. Encoding that map
// back to JSON only to decode it into the input type costs a dozen
// allocations and a microsecond a call, so each input type gets a decoder,
// built once at Register, that copies the values straight from the map.
// It handles the types such inputs are made of — strings, booleans,
// numbers, structs, pointers, slices, maps with string keys and any — when
// the values have the dynamic types JSON decoding gives (float64 for
// numbers, []any, map[string]any) and every key names a field exactly.
// Anything else — a type with its own UnmarshalJSON, an embedded struct, a
// ",string" field, an int where a float64 is expected, a null, a key in
// another case — is decoded through encoding/json instead. The fast path is
// only an optimisation: the result, and whether there is an error, are
// encoding/json's with DisallowUnknownFields (decode_test.go compares them).
//
// It pays: BenchmarkDecode (decode_bench_test.go) measures, against the
// round trip it replaces, 16× less time and 66× fewer bytes for a one-field
// input (get_incident: 142 ns and 16 B against 2.3 µs and 1.1 KB), and 14×
// less time and 12× fewer bytes for a seven-field one.

// decoder copies v, a value decoded from JSON, into dst. It returns
// errFallback when it cannot, leaving dst in an unspecified state.
type decoder func(v any, dst reflect.Value) error

// errFallback says the fast path cannot decode a value: use encoding/json.
var errFallback = fmt.Errorf("usecase: fall back to encoding/json")

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decoderFor returns the fast decoder of t, or nil when t needs
// encoding/json.
func decoderFor(t reflect.Type) decoder {
	return newDecoderBuilder().build(t)
}

type decoderBuilder struct {
	// building holds the decoders of struct types being built, so that a
	// recursive type refers to itself.
	building map[reflect.Type]*decoder
}

func newDecoderBuilder() *decoderBuilder {
	return &decoderBuilder{building: map[reflect.Type]*decoder{}}
}

func (b *decoderBuilder) build(t reflect.Type) decoder {
	if t.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) ||
		reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		return decodeString
	case reflect.Bool:
		return decodeBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return decodeInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return decodeUint
	case reflect.Float32, reflect.Float64:
		return decodeFloat
	case reflect.Interface:
		if t.NumMethod() != 0 {
			return nil
		}
		return decodeAny
	case reflect.Pointer:
		return b.pointer(t)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte is base64 in JSON
		}
		return b.slice(t)
	case reflect.Map:
		if t.Key().Kind() != reflect.String || t.Key() != reflect.TypeFor[string]() {
			return nil
		}
		return b.mapOf(t)
	case reflect.Struct:
		return b.structOf(t)
	}
	return nil
}

func decodeString(v any, dst reflect.Value) error {
	s, ok := v.(string)
	if !ok {
		return errFallback
	}
	dst.SetString(s)
	return nil
}

func decodeBool(v any, dst reflect.Value) error {
	x, ok := v.(bool)
	if !ok {
		return errFallback
	}
	dst.SetBool(x)
	return nil
}

func decodeInt(v any, dst reflect.Value) error {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 || dst.OverflowInt(int64(f)) {
		return errFallback
	}
	dst.SetInt(int64(f))
	return nil
}

func decodeUint(v any, dst reflect.Value) error {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Signbit(f) || f >= math.MaxUint64 || dst.OverflowUint(uint64(f)) {
		return errFallback
	}
	dst.SetUint(uint64(f))
	return nil
}

func decodeFloat(v any, dst reflect.Value) error {
	f, ok := v.(float64)
	// A float32 is taken only when f is exactly one: encoding/json rounds the
	// decimal text to float32 once, a conversion would round twice.
	if !ok || dst.Kind() == reflect.Float32 && float64(float32(f)) != f {
		return errFallback
	}
	dst.SetFloat(f)
	return nil
}

// decodeAny keeps a value that is already in the form encoding/json would
// give an interface.
func decodeAny(v any, dst reflect.Value) error {
	if !jsonNative(v, 0) {
		return errFallback
	}
	if v == nil {
		dst.SetZero()
		return nil
	}
	dst.Set(reflect.ValueOf(v))
	return nil
}

// jsonNative reports whether v holds only what decoding JSON into an any
// produces.
func jsonNative(v any, depth int) bool {
	if depth > 64 {
		return false
	}
	switch x := v.(type) {
	case nil, bool, float64, string:
		return true
	case []any:
		for _, e := range x {
			if !jsonNative(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !jsonNative(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

func (b *decoderBuilder) pointer(t reflect.Type) decoder {
	elem := b.build(t.Elem())
	if elem == nil {
		return nil
	}
	return func(v any, dst reflect.Value) error {
		if v == nil {
			dst.SetZero()
			return nil
		}
		p := reflect.New(t.Elem())
		if err := elem(v, p.Elem()); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	}
}

func (b *decoderBuilder) slice(t reflect.Type) decoder {
	elem := b.build(t.Elem())
	if elem == nil {
		return nil
	}
	return func(v any, dst reflect.Value) error {
		if v == nil {
			dst.SetZero()
			return nil
		}
		list, ok := v.([]any)
		if !ok {
			return errFallback
		}
		s := reflect.MakeSlice(t, len(list), len(list))
		for i, e := range list {
			if err := elem(e, s.Index(i)); err != nil {
				return err
			}
		}
		dst.Set(s)
		return nil
	}
}

func (b *decoderBuilder) mapOf(t reflect.Type) decoder {
	elem := b.build(t.Elem())
	if elem == nil {
		return nil
	}
	return func(v any, dst reflect.Value) error {
		if v == nil {
			dst.SetZero()
			return nil
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return errFallback
		}
		m := reflect.MakeMapWithSize(t, len(obj))
		for k, e := range obj {
			ev := reflect.New(t.Elem()).Elem()
			if err := elem(e, ev); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(k), ev)
		}
		dst.Set(m)
		return nil
	}
}

type field struct {
	index int
	dec   decoder
}

func (b *decoderBuilder) structOf(t reflect.Type) decoder {
	if d, ok := b.building[t]; ok {
		return func(v any, dst reflect.Value) error { return (*d)(v, dst) }
	}
	var self decoder
	b.building[t] = &self
	fields := map[string]field{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil // promoted fields: leave them to encoding/json
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",string,") {
			return nil
		}
		if name == "" {
			name = f.Name
		}
		if strings.ContainsAny(name, "\"\\") {
			return nil // not a valid tag name: encoding/json uses the field's
		}
		dec := b.build(f.Type)
		if dec == nil {
			return nil
		}
		if _, dup := fields[name]; dup {
			return nil // encoding/json's rules for duplicate names apply
		}
		fields[name] = field{index: i, dec: dec}
	}
	self = func(v any, dst reflect.Value) error {
		obj, ok := v.(map[string]any)
		if !ok {
			return errFallback
		}
		for k, e := range obj {
			f, ok := fields[k]
			if !ok {
				return errFallback // unknown, or in another case: encoding/json decides
			}
			if err := f.dec(e, dst.Field(f.index)); err != nil {
				return err
			}
		}
		return nil
	}
	return self
}

// argsDecoder decodes arguments into values of one input type.
type argsDecoder[In any] struct {
	fast decoder // nil: always encoding/json
}

func newArgsDecoder[In any]() *argsDecoder[In] {
	return &argsDecoder[In]{fast: decoderFor(reflect.TypeFor[In]())}
}

// decode decodes args strictly: field names match exactly and an unknown
// field is an error. Nil args are an empty object.
func (d *argsDecoder[In]) decode(args map[string]any) (In, error) {
	var in In
	if d.fast != nil {
		if args == nil {
			return in, nil
		}
		err := d.fast(args, reflect.ValueOf(&in).Elem())
		if err != errFallback {
			return in, err
		}
		in = *new(In)
	}
	err := decodeJSON(args, &in)
	return in, err
}

// decodeJSON decodes args through their JSON form, refusing unknown fields.
func decodeJSON(args map[string]any, v any) error {
	raw := []byte("{}")
	if args != nil {
		var err error
		if raw, err = json.Marshal(args); err != nil {
			return err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
