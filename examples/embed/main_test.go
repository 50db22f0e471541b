package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/examples/incidents"
)

// TestRun runs the example end to end and checks what each caller got.
func TestRun(t *testing.T) {
	register()
	incidents.Reset()
	t.Cleanup(incidents.Reset)
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		`{"subject":"alice","roles":["sre"],"tenant":"acme"}`,
		`"id":"INC-1","tenant":"acme"`,
		`error: there is no incident "INC-1" in tenant globex`,
		`refused: TOOL_UNKNOWN`, // close_incident is denied to bob whatever its arguments
		`(approving incidents_close_incident for alice)`,
		`"status":"closed","resolution":"rotated the logs","closed_by":"alice"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
