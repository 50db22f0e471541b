package config

import (
	"errors"
	"strings"
	"testing"
)

// TestYAMLDiag checks that a YAML error keeps its line and column and loses
// its quoted text.
func TestYAMLDiag(t *testing.T) {
	for _, tc := range []struct {
		err        string
		line, col  int
		mustNotSay string
	}{
		{"yaml: line 3: did not find expected key", 3, 0, "line"},
		{"yaml: line 3, column 7: did not find expected key", 3, 7, "column"},
		{"yaml: line 12 column 2: found a tab", 12, 2, "column"},
		{"yaml: unmarshal errors:\n  line 2: mapping key \"hunter2\" already defined at line 1", 2, 0, "hunter2"},
		{"yaml: cannot decode !!str `hunter2` as a !!int", 0, 0, "hunter2"},
		{"yaml: unknown anchor 'hunter2' referenced", 0, 0, "hunter2"},
	} {
		d := yamlDiag("api.yaml", errors.New(tc.err))
		if d.Range == nil || d.Range.File != "api.yaml" || d.Range.Line != tc.line || d.Range.Column != tc.col {
			t.Errorf("%q: located at %v, want line %d column %d", tc.err, d.Range, tc.line, tc.col)
		}
		if strings.Contains(d.Summary, tc.mustNotSay) || strings.Contains(d.Summary, "\n") {
			t.Errorf("%q: summary %q", tc.err, d.Summary)
		}
	}
}
