package usecase

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type inner struct {
	Name string   `json:"name"`
	Tags []string `json:"tags,omitempty"`
	Next *inner   `json:"next,omitempty"`
}

// wide has a field of every kind the fast path handles.
type wide struct {
	S     string            `json:"s"`
	B     bool              `json:"b,omitempty"`
	I     int               `json:"i,omitempty"`
	I8    int8              `json:"i8,omitempty"`
	U     uint              `json:"u,omitempty"`
	U16   uint16            `json:"u16,omitempty"`
	F     float64           `json:"f,omitempty"`
	F32   float32           `json:"f32,omitempty"`
	A     any               `json:"a,omitempty"`
	P     *int              `json:"p,omitempty"`
	L     []int             `json:"l,omitempty"`
	M     map[string]string `json:"m,omitempty"`
	In    inner             `json:"in"`
	PIn   *inner            `json:"pin,omitempty"`
	NoTag string
	Skip  string `json:"-"`
	priv  string // unexported fields are ignored
}

var _ = wide{}.priv

// slow has a field that needs encoding/json.
type slow struct {
	When time.Time `json:"when"`
	N    int       `json:"n,string"`
}

type embeds struct {
	inner
	X int `json:"x"`
}

func TestFastPathIsTaken(t *testing.T) {
	for _, c := range []struct {
		typ  reflect.Type
		fast bool
	}{
		{reflect.TypeFor[wide](), true},
		{reflect.TypeFor[inner](), true},
		{reflect.TypeFor[struct{}](), true},
		{reflect.TypeFor[map[string]any](), true},
		{reflect.TypeFor[slow](), false},
		{reflect.TypeFor[embeds](), false},
		{reflect.TypeFor[struct{ B []byte }](), false},
		{reflect.TypeFor[struct{ E error }](), false},
	} {
		if got := decoderFor(c.typ) != nil; got != c.fast {
			t.Errorf("%v: fast path %v, want %v", c.typ, got, c.fast)
		}
	}
}

// decodeSeeds are argument objects, as JSON, for the equivalence tests.
var decodeSeeds = []string{
	`{}`,
	`{"s":"x","b":true,"i":-3,"i8":127,"u":7,"u16":65535,"f":1.5,"f32":0.25,"a":{"k":[1,"two",null,true]},"p":4,"l":[1,2],"m":{"a":"b"},"in":{"name":"n","tags":["t"],"next":{"name":"m"}},"pin":{"name":"p"},"NoTag":"y"}`,
	`{"i8":128}`,          // overflow
	`{"u":-1}`,            // negative
	`{"u":-0}`,            // negative zero
	`{"i":1.5}`,           // fraction
	`{"i":1e21}`,          // too large
	`{"f32":0.1}`,         // not a float32
	`{"f32":1e39}`,        // float32 overflow
	`{"s":null,"p":null}`, // nulls
	`{"S":"case"}`,        // another case
	`{"extra":1}`,         // unknown
	`{"Skip":"x"}`,        // a field json ignores
	`{"priv":"x"}`,        // unexported
	`{"in":{"name":"x","other":1}}`,
	`{"l":[1,"x"]}`,
	`{"m":{"a":1}}`,
	`{"in":[]}`,
	`{"a":null}`,
	`{"l":null,"m":null,"pin":null}`,
}

// FuzzDecodeMatchesJSON checks that the fast path gives what encoding/json
// gives, whenever it does not fall back.
func FuzzDecodeMatchesJSON(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add(s)
	}
	fast := decoderFor(reflect.TypeFor[wide]())
	f.Fuzz(func(t *testing.T, s string) {
		var args map[string]any
		if json.Unmarshal([]byte(s), &args) != nil || args == nil {
			return
		}
		var viaJSON wide
		jerr := decodeJSON(args, &viaJSON)
		var viaFast wide
		ferr := fast(args, reflect.ValueOf(&viaFast).Elem())
		if ferr == errFallback {
			return
		}
		if ferr != nil || jerr != nil {
			t.Fatalf("%s: fast error %v, encoding/json error %v", s, ferr, jerr)
		}
		if diff := cmp.Diff(viaJSON, viaFast, cmp.AllowUnexported(wide{})); diff != "" {
			t.Fatalf("%s: (-encoding/json +fast):\n%s", s, diff)
		}
	})
}

func TestDecodeFallsBackWithTheSameResult(t *testing.T) {
	d := newArgsDecoder[wide]()
	for _, s := range decodeSeeds {
		var args map[string]any
		if err := json.Unmarshal([]byte(s), &args); err != nil {
			t.Fatal(err)
		}
		got, gerr := d.decode(args)
		var want wide
		werr := decodeJSON(args, &want)
		if (gerr == nil) != (werr == nil) {
			t.Errorf("%s: error %v, encoding/json says %v", s, gerr, werr)
			continue
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(wide{})); gerr == nil && diff != "" {
			t.Errorf("%s: (-encoding/json +decode):\n%s", s, diff)
		}
	}
}

func TestDecodeNeedsJSON(t *testing.T) {
	d := newArgsDecoder[slow]()
	got, err := d.decode(map[string]any{"when": "2026-11-29T10:00:00Z", "n": "42"})
	if err != nil || got.N != 42 || got.When.Year() != 2026 {
		t.Errorf("decode = %+v, %v", got, err)
	}
	if _, err := d.decode(map[string]any{"nope": 1}); err == nil {
		t.Error("an unknown field was accepted")
	}
}
