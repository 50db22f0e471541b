package usecase

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

type getIncident struct {
	ID string `json:"id"`
}

type searchIncidents struct {
	Query    string   `json:"query"`
	Severity int      `json:"severity,omitempty"`
	Status   string   `json:"status,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	Limit    int      `json:"limit,omitempty"`
	Open     bool     `json:"open,omitempty"`
	Since    string   `json:"since,omitempty"`
}

// BenchmarkDecode compares the fast decoder with what it replaces, a JSON
// round trip (encode the arguments' map, decode it with
// DisallowUnknownFields), on the arguments of two typical operations.
func BenchmarkDecode(b *testing.B) {
	for _, c := range []struct {
		name string
		typ  reflect.Type
		args map[string]any
	}{
		{"get_incident", reflect.TypeFor[getIncident](), map[string]any{"id": "INC-1"}},
		{"search", reflect.TypeFor[searchIncidents](), map[string]any{
			"query": "disk full", "severity": float64(4), "status": "open", "tags": []any{"db", "eu"},
			"limit": float64(20), "open": true, "since": "2026-11-01"}},
	} {
		dec := decoderFor(c.typ)
		if dec == nil {
			b.Fatalf("%s: no fast decoder", c.name)
		}
		b.Run(c.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				dst := reflect.New(c.typ).Elem()
				if err := dec(c.args, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				data, err := json.Marshal(c.args)
				if err != nil {
					b.Fatal(err)
				}
				d := json.NewDecoder(bytes.NewReader(data))
				d.DisallowUnknownFields()
				if err := d.Decode(reflect.New(c.typ).Interface()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
