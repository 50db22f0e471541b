package grants

import (
	"testing"

	"github.com/heddlehq/heddle/diag"
)

// TestToolOverridesLookup: an exact name decides over any glob, a longer
// glob over a shorter one.
func TestToolOverridesLookup(t *testing.T) {
	yes, no := true, false
	o := ToolOverrides{
		"write_*":     {Destructive: &yes},
		"write_note*": {Destructive: &no},
		"write_notes": {ReadOnly: &yes},
		"*":           {Idempotent: &yes},
	}
	for name, key := range map[string]string{
		"write_notes": "write_notes", "write_note_x": "write_note*", "write_db": "write_*", "read": "*",
	} {
		if _, got, ok := o.Lookup(name); !ok || got != key {
			t.Errorf("Lookup(%s) = %q, %v; want %q", name, got, ok, key)
		}
	}
	if _, _, ok := (ToolOverrides{"a*": {}}).Lookup("b"); ok {
		t.Error("a glob that does not match decided")
	}
}

// TestToolOverrideApply: a setting replaces the claim, with MCP's coupling
// of destructive and read-only.
func TestToolOverrideApply(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		o          ToolOverride
		d, ro, idm bool // from a claim of destructive, read-only, not idempotent
	}{
		{ToolOverride{Destructive: &no}, false, true, false},
		{ToolOverride{Destructive: &yes}, true, false, false},
		{ToolOverride{ReadOnly: &yes}, false, true, false},
		{ToolOverride{ReadOnly: &no}, true, false, false},
		{ToolOverride{ReadOnly: &no, Destructive: &no}, false, false, false},
		{ToolOverride{Idempotent: &yes}, true, true, true},
	}
	for i, tc := range tests {
		d, ro, idm := tc.o.Apply(true, true, false)
		if d != tc.d || ro != tc.ro || idm != tc.idm {
			t.Errorf("%d: Apply = %v, %v, %v; want %v, %v, %v", i, d, ro, idm, tc.d, tc.ro, tc.idm)
		}
	}
}

// TestCheckToolOverrides: globs of one length that can match one name and
// disagree are TOOL_OVERRIDE_CONFLICT; disjoint ones, agreeing ones, and
// ones of different lengths are not.
func TestCheckToolOverrides(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		o    map[string]*ToolOverride
		want []diag.Code
	}{
		{"overlap", map[string]*ToolOverride{"write_*": {Destructive: &yes}, "*_notes": {Destructive: &no}}, []diag.Code{diag.ToolOverrideConflict}},
		{"question marks", map[string]*ToolOverride{"a?c": {Destructive: &yes}, "?b?": {Destructive: &no}}, []diag.Code{diag.ToolOverrideConflict}},
		{"class", map[string]*ToolOverride{"[ab]x*": {Destructive: &yes}, "b?yyy*": {Destructive: &no}}, []diag.Code{diag.ToolOverrideConflict}},
		{"disjoint", map[string]*ToolOverride{"read_*": {ReadOnly: &yes}, "sync_*": {Destructive: &yes}}, nil},
		{"disjoint class", map[string]*ToolOverride{"[ab]x*": {Destructive: &yes}, "c?yyy*": {Destructive: &no}}, nil},
		{"agree", map[string]*ToolOverride{"write_*": {Destructive: &yes}, "*_notes": {Destructive: &yes}}, nil},
		{"lengths", map[string]*ToolOverride{"write_*": {Destructive: &yes}, "*_notes_": {Destructive: &no}}, nil},
		{"exact", map[string]*ToolOverride{"write_x": {Destructive: &yes}, "write_*": {Destructive: &no}}, nil},
		{"empty", map[string]*ToolOverride{"x": {}}, []diag.Code{diag.ConfigValueInvalid}},
		{"both", map[string]*ToolOverride{"x": {Destructive: &yes, ReadOnly: &yes}}, []diag.Code{diag.ConfigValueInvalid}},
		{"malformed", map[string]*ToolOverride{"x[": {Destructive: &yes}}, []diag.Code{diag.MCPFilterInvalid}},
	}
	for _, tc := range tests {
		ds := CheckToolOverrides(tc.o, diag.MCPFilterInvalid, "tools")
		var got []diag.Code
		for _, d := range ds {
			got = append(got, d.Code)
		}
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("%s: codes %v, want %v", tc.name, got, tc.want)
		}
	}
}
