package runtime

// Tests that the call path's shortcuts (see docs/performance.md) decide
// exactly as the slow paths they skip: quickValid as jsonschema's validator,
// jsonNative as a JSON round trip, resultSizeBound as json.Marshal.

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// randSchema returns a random schema of the kind plainSchema accepts (and,
// one time in eight, one it does not).
func randSchema(r *rand.Rand, depth int) map[string]any {
	s := map[string]any{}
	types := []string{"", "null", "boolean", "string", "integer", "number", "object", "array"}
	if t := types[r.IntN(len(types))]; t != "" {
		s["type"] = t
	}
	if depth < 3 && r.IntN(2) == 0 {
		props := map[string]any{}
		for _, name := range []string{"a", "b", "c"}[:1+r.IntN(3)] {
			props[name] = randSchema(r, depth+1)
		}
		s["properties"] = props
	}
	if r.IntN(2) == 0 {
		s["required"] = []string{"a", "b", "d"}[:r.IntN(3)]
	}
	switch r.IntN(4) {
	case 0:
		s["additionalProperties"] = false
	case 1:
		s["additionalProperties"] = true
	}
	if r.IntN(3) == 0 {
		s["description"] = "d"
	}
	if depth == 0 && r.IntN(4) == 0 {
		s["$schema"] = "http://json-schema.org/draft-07/schema#"
	}
	if r.IntN(8) == 0 {
		s["minLength"] = 2 // not plain
	}
	return s
}

// randValue returns a random value of the types encoding/json decodes into.
func randValue(r *rand.Rand, depth int) any {
	switch r.IntN(8) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return []string{"", "x", "héllo", "<&>\u2028"}[r.IntN(4)]
	case 3:
		return float64(r.IntN(5) - 2)
	case 4:
		return r.Float64()*10 - 5
	case 5:
		if depth < 3 {
			a := []any{}
			for range r.IntN(3) {
				a = append(a, randValue(r, depth+1))
			}
			return a
		}
	}
	return randObject(r, depth)
}

func randObject(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	if depth < 3 {
		for _, k := range []string{"a", "b", "c", "d"} {
			if r.IntN(2) == 0 {
				m[k] = randValue(r, depth+1)
			}
		}
	}
	return m
}

func TestQuickValidAgreesWithValidator(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	plain, agreedValid, agreedInvalid := 0, 0, 0
	for range 3000 {
		raw, _ := json.Marshal(randSchema(r, 0))
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			continue
		}
		if !plainSchema(&s, true) {
			if strings.Contains(string(raw), "minLength") {
				continue
			}
			t.Fatalf("plainSchema(%s) = false", raw)
		}
		plain++
		for range 20 {
			v := any(randObject(r, 0))
			if r.IntN(4) == 0 {
				v = randValue(r, 0)
			}
			quick, full := quickValid(&s, v), rs.Validate(v) == nil
			if quick != full {
				t.Fatalf("schema %s, instance %#v: quickValid %v, validator %v", raw, v, quick, full)
			}
			if quick {
				agreedValid++
			} else {
				agreedInvalid++
			}
		}
	}
	t.Logf("%d plain schemas; agreed on %d valid and %d invalid instances", plain, agreedValid, agreedInvalid)
}

// TestPlainSchemaOfSDKTools checks that the schemas go-sdk infers for typed
// tools take the quick path.
func TestPlainSchemaOfSDKTools(t *testing.T) {
	type in struct {
		Text  string  `json:"text" jsonschema:"the text"`
		N     int     `json:"n,omitempty"`
		F     float64 `json:"f"`
		Flag  bool    `json:"flag"`
		Inner struct {
			X string `json:"x"`
		} `json:"inner"`
	}
	s, err := jsonschema.For[in](nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &toolDef{tool: &mcp.Tool{Name: "t", InputSchema: s}}
	ok := map[string]any{"text": "a", "f": 1.5, "flag": true, "inner": map[string]any{"x": "y"}}
	if msg := validateArgs(d, ok); msg != "" {
		t.Fatalf("valid arguments refused: %s", msg)
	}
	if d.plain == nil {
		t.Fatal("an inferred schema is not plain")
	}
	for _, bad := range []map[string]any{
		{"text": "a", "f": 1.5, "flag": true},                                          // inner missing
		{"text": "a", "f": 1.5, "flag": true, "inner": map[string]any{"x": 1.0}},       // x not a string
		{"text": "a", "f": 1.5, "flag": true, "inner": map[string]any{}, "extra": 1.0}, // additional property
		{"text": "a", "n": 1.5, "f": 1.0, "flag": true, "inner": map[string]any{"x": ""}},
	} {
		if validateArgs(d, bad) == "" {
			t.Errorf("invalid arguments %v accepted", bad)
		}
	}
	// Go values that are not JSON's own take the round trip: ints become
	// numbers.
	if msg := validateArgs(d, map[string]any{"text": "a", "n": 3, "f": 2, "flag": false, "inner": map[string]any{"x": ""}}); msg != "" {
		t.Fatalf("int arguments refused: %s", msg)
	}
}

func TestJSONNativeRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for range 5000 {
		v := randValue(r, 0)
		if !jsonNative(v, 0) {
			t.Fatalf("jsonNative(%#v) = false", v)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var back any
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(v, back) {
			t.Fatalf("%#v came back as %#v", v, back)
		}
	}
	for _, v := range []any{
		math.NaN(), math.Inf(1), "\xff", map[string]any{"\xff": 1.0}, 3, int64(3), float32(1),
		map[string]any(nil), []any(nil), []string{"a"}, map[string]string{}, json.Number("1"),
	} {
		if jsonNative(v, 0) {
			t.Errorf("jsonNative(%#v) = true", v)
		}
	}
}

func TestResultSizeBound(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	strs := []string{"", "plain", "<>&\u2028\x01", "\xff\xfe", strings.Repeat("é", 50)}
	for range 5000 {
		res := &mcp.CallToolResult{IsError: r.IntN(2) == 0}
		for range r.IntN(4) {
			var meta mcp.Meta
			if r.IntN(3) == 0 {
				meta = mcp.Meta{"k": randValue(r, 0)}
			}
			switch r.IntN(3) {
			case 0:
				res.Content = append(res.Content, &mcp.TextContent{Text: strs[r.IntN(len(strs))], Meta: meta})
			case 1:
				res.Content = append(res.Content, &mcp.ImageContent{Data: make([]byte, r.IntN(10)), MIMEType: "image/png", Meta: meta})
			case 2:
				res.Content = append(res.Content, &mcp.AudioContent{Data: make([]byte, r.IntN(10)), MIMEType: strs[r.IntN(len(strs))], Meta: meta})
			}
		}
		if r.IntN(2) == 0 {
			res.StructuredContent = randValue(r, 0)
		}
		if r.IntN(3) == 0 {
			res.Meta = mcp.Meta{"code": strs[r.IntN(len(strs))], "nested": randObject(r, 0)}
		}
		if r.IntN(4) == 0 {
			res.RequestState = strs[r.IntN(len(strs))]
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := resultSizeBound(res, 1<<20)
		if !ok {
			t.Fatalf("no bound for %s", b)
		}
		if n < len(b) {
			t.Fatalf("bound %d below size %d of %s", n, len(b), b)
		}
		if _, ok := resultSizeBound(res, len(b)-1); ok && n > len(b)-1 {
			t.Fatalf("a bound over the limit was reported as ok")
		}
	}
	// What the bound does not know is left to json.Marshal.
	for _, res := range []*mcp.CallToolResult{
		{Content: []mcp.Content{&mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{}}}},
		{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///x", Name: "x"}}},
		{StructuredContent: struct{ A int }{1}},
		{StructuredContent: map[string]any{"x": math.NaN()}},
		{Meta: mcp.Meta{"x": 1}},
	} {
		if _, ok := resultSizeBound(res, 1<<20); ok {
			t.Errorf("resultSizeBound(%+v) gave a bound", res)
		}
	}
}

// BenchmarkCallPath measures the pieces of heddle's own work in one call,
// without a server: what Toolset.Call adds around the go-sdk's CallTool.
func BenchmarkCallPath(b *testing.B) {
	type echoIn struct {
		Text string `json:"text" jsonschema:"the text to echo back"`
	}
	schema, err := jsonschema.For[echoIn](nil)
	if err != nil {
		b.Fatal(err)
	}
	def := &toolDef{tool: &mcp.Tool{Name: "echo", InputSchema: schema}}
	args := map[string]any{"text": "hello, heddle"}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, heddle"}}, StructuredContent: map[string]any{"text": "hello, heddle"}}
	ix, err := buildIndex(benchCandidates(100))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("validateArgs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if msg := validateArgs(def, args); msg != "" {
				b.Fatal(msg)
			}
		}
	})
	b.Run("capResult", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			capResult(res, 1<<20)
		}
	})
	b.Run("lookup", func(b *testing.B) { // a primary name
		b.ReportAllocs()
		for b.Loop() {
			ix.lookup(ix.names[42])
		}
	})
	for _, linger := range []bool{false, true} {
		name := "deadline" // stdio servers and use cases: one plain deadline context
		if linger {
			name = "deadline+linger" // HTTP servers: a callContext
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				s := callDeadline(ctx, time.Now().Add(20*time.Second), linger)
				_ = s.ctx.Done() // the SDK waits on it
				s.end(false)     // a success would linger a second; end it now
			}
		})
	}
}
