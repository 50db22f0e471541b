package diag_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/diag"
)

func TestDiagnostics(t *testing.T) {
	var ds diag.Diagnostics
	if ds.Err() != nil || ds.HasErrors() {
		t.Fatal("nil diagnostics report errors")
	}
	ds = ds.Append(
		diag.Warnf(diag.TimeoutRace, "policies.tool_timeout_ms", "race"),
		diag.Errorf(diag.MCPAuthConflict, "ai.mcp_servers.b", "conflict").At(&diag.Range{File: "api.yaml", Line: 9, Column: 3}),
		diag.Errorf(diag.MCPURLInvalid, "ai.mcp_servers.a.url", "bad").At(&diag.Range{File: "api.yaml", Line: 4}),
	)
	if !ds.HasErrors() || len(ds.Errors()) != 2 {
		t.Fatalf("errors: %v", ds.Errors())
	}
	ds.Sort()
	if got := fmt.Sprint(ds.Codes()); got != "[TIMEOUT_RACE MCP_URL_INVALID MCP_AUTH_CONFLICT]" {
		t.Errorf("sorted codes = %s", got)
	}
	if got, want := ds[1].Error(), "api.yaml:4: MCP_URL_INVALID ai.mcp_servers.a.url: bad"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	err := ds.Err()
	for _, c := range []diag.Code{diag.MCPURLInvalid, diag.MCPAuthConflict} {
		if !diag.Has(err, c) {
			t.Errorf("Err() does not carry %s", c)
		}
	}
	if diag.Has(err, diag.TimeoutRace) {
		t.Error("Err() carries a warning")
	}
}

func TestCodedErrors(t *testing.T) {
	cause := errors.New("dial tcp 10.0.0.1:443: refused")
	err := fmt.Errorf("opening: %w", diag.Wrap(diag.MCPServerUnreachable, cause, "server %s: cannot connect", "a"))
	if diag.CodeOf(err) != diag.MCPServerUnreachable || !diag.Has(err, diag.MCPServerUnreachable) {
		t.Fatalf("code of %v", err)
	}
	if !errors.Is(err, cause) || diag.Reason(err) != cause.Error() {
		t.Error("the cause is lost")
	}
	if got := err.Error(); got != "opening: MCP_SERVER_UNREACHABLE: server a: cannot connect" {
		t.Errorf("Error() = %q: the cause must stay out of the message", got)
	}
	joined := errors.Join(diag.New(diag.SecretEmpty, "x"), diag.New(diag.SecretUnresolved, "y"))
	if !diag.Has(joined, diag.SecretUnresolved) || diag.Has(joined, diag.ToolDenied) {
		t.Error("Has does not see through errors.Join")
	}
	if diag.CodeOf(errors.New("plain")) != "" || diag.Has(nil, diag.ToolDenied) {
		t.Error("an uncoded error has a code")
	}
}

// TestQuote: what a caller sent is repeated whole up to EchoLimit
// characters, and cut with "…" after.
func TestQuote(t *testing.T) {
	long := strings.Repeat("é", diag.EchoLimit+1)
	for _, tc := range []struct{ in, want string }{
		{"echo", `"echo"`},
		{strings.Repeat("x", diag.EchoLimit), `"` + strings.Repeat("x", diag.EchoLimit) + `"`},
		{long, `"` + strings.Repeat("é", diag.EchoLimit) + `…"`},
		{"a\nb", `"a\nb"`},
	} {
		if got := diag.Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%.10q…) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if got := diag.Clip(strings.Repeat("\xff", 100)); len(got) != diag.EchoLimit+len("…") {
		t.Errorf("Clip of invalid UTF-8: %d bytes", len(got))
	}
}
