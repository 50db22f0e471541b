package canonjson

import (
	"encoding/json"
	"testing"
)

func TestMarshal(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{`{"b":1,"a":[true,null,"x"]}`, `{"a":[true,null,"x"],"b":1}`},
		{` { "z" : { "y":2 , "x":1 } } `, `{"z":{"x":1,"y":2}}`},
		{`"<a & b>"`, `"<a & b>"`},
		{`"tab\there \u0001 \u00e9 \u2028"`, "\"tab\\there \\u0001 \u00e9 \u2028\""},
		{`[1.0, 1e3, 0.000001, 1e-7, 1e21, -0, 12345678901234567]`, `[1,1000,0.000001,1e-7,1e+21,0,12345678901234568]`},
		// Keys sort by UTF-16 code units: U+FF61 before U+1F600 (a surrogate pair).
		{"{\"\U0001F600\":1,\"\uff61\":2,\"a\":3}", "{\"a\":3,\"\U0001F600\":1,\"\uff61\":2}"},
	} {
		got, err := Marshal(json.RawMessage(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if string(got) != tc.want {
			t.Errorf("Marshal(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestMarshalStructAndGenericAgree(t *testing.T) {
	type s struct {
		B string `json:"b"`
		A int    `json:"a"`
	}
	x, err := Marshal(s{B: "<>", A: 2})
	if err != nil {
		t.Fatal(err)
	}
	y, err := Marshal(map[string]any{"a": 2.0, "b": "<>"})
	if err != nil {
		t.Fatal(err)
	}
	if string(x) != string(y) || string(x) != `{"a":2,"b":"<>"}` {
		t.Errorf("struct %s, map %s", x, y)
	}
}
