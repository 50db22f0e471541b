package runtime_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime/driver"
)

// TestReason: a dependency's reason is its coded error's message less the
// lead-in naming it, on one line, with what could be a secret redacted,
// and never a library's own text.
func TestReason(t *testing.T) {
	t.Parallel()
	cause := errors.New("dial tcp: lookup user:hunter2@db: no such host")
	for _, tc := range []struct {
		name string
		err  error
		hide []string
		want string
	}{
		{"nil", nil, nil, ""},
		{"uncoded", cause, nil, ""},
		{"cause left out", diag.Wrap(diag.MCPServerUnreachable, cause, "server x: command /opt/srv not found"), nil,
			"command /opt/srv not found"},
		{"wrapped", fmt.Errorf("opening: %w", diag.New(diag.SQLSourceUnreachable, "sql source x: cannot connect to PostgreSQL at db:5432")), nil,
			"cannot connect to PostgreSQL at db:5432"},
		{"lead-in without a colon", diag.New(diag.ToolUnavailable, "server x lost its connection; reconnecting"), nil,
			"lost its connection; reconnecting"},
		{"two words of lead-in", diag.New(diag.SQLSourceUnreachable, "sql source x: cannot connect"), nil, "cannot connect"},
		{"lead-in of another", diag.New(diag.MCPServerUnreachable, "server xy: refused"), nil, "server xy: refused"},
		{"name later on", diag.New(diag.MCPServerUnreachable, "the handshake of server x failed"), nil, "the handshake of server x failed"},
		{"hidden value", diag.New(diag.MCPServerUnreachable, `server x: command srv exited with status 1; its last line on stderr: "bad key s3cr3t-value"`), []string{"s3cr3t-value", "abc"},
			`command srv exited with status 1; its last line on stderr: "bad key [redacted]"`},
		{"userinfo", diag.New(diag.MCPServerUnreachable, `server x: command srv exited; its last line on stderr: "cannot open postgres://app:hunter2@db:5432/app"`), nil,
			`command srv exited; its last line on stderr: "cannot open postgres://[redacted]@db:5432/app"`},
		{"query", diag.New(diag.MCPServerUnreachable, `server x: stderr: "GET https://api.example.com/v1?key=abc&sig=def failed"`), nil,
			`stderr: "GET https://api.example.com/v1?[redacted] failed"`},
		{"bearer", diag.New(diag.MCPServerUnreachable, `server x: stderr: "sent Bearer eyJhbGciOiJIUzI1NiJ9.payload"`), nil,
			`stderr: "sent Bearer [redacted]"`},
		{"bearer strategy named", diag.New(diag.MCPAuthRejected, "server x: answered HTTP 401 Unauthorized during the handshake: the credentials of its bearer strategy were refused"), nil,
			"answered HTTP 401 Unauthorized during the handshake: the credentials of its bearer strategy were refused"},
		{"key=value", diag.New(diag.MCPServerUnreachable, `server x: its last line on stderr: "config: api_key=sk-12345, PASSWORD: hunter2 token=\"t0k\""`), nil,
			`its last line on stderr: "config: api_key=[redacted], PASSWORD: [redacted] token=\"[redacted]\""`},
		{"one line", diag.New(diag.MCPListFailed, "server x: tools/list failed:\n\tit answered\r\nwith\x00 an error  "), nil,
			"tools/list failed: it answered with an error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := driver.Reason(tc.err, "x", tc.hide...); got != tc.want {
				t.Errorf("Reason = %q\nwant     %q", got, tc.want)
			}
		})
	}
}

// TestReasonBounded: a long reason is cut to MaxReason bytes on a
// character boundary, the cut marked; a redaction is made before the cut,
// so no prefix of a secret is left at the end.
func TestReasonBounded(t *testing.T) {
	t.Parallel()
	long := "server x: " + strings.Repeat("é", 150) + " trailing"
	got := driver.Reason(diag.New(diag.MCPServerUnreachable, "%s", long), "x")
	if len(got) > driver.MaxReason || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "éé") {
		t.Errorf("Reason of %d bytes = %q (%d bytes), want at most %d, valid, ending in …", len(long), got, len(got), driver.MaxReason)
	}
	secret := strings.Repeat("k", 64)
	msg := "server x: " + strings.Repeat("a", driver.MaxReason-20) + " " + secret
	got = driver.Reason(diag.New(diag.MCPServerUnreachable, "%s", msg), "x", secret)
	if strings.Contains(got, "kkkk") || len(got) > driver.MaxReason {
		t.Errorf("Reason = %q, want the secret redacted before the cut", got)
	}
	short := "server x: refused"
	if got := driver.Reason(diag.New(diag.MCPServerUnreachable, "%s", short), "x"); got != "refused" {
		t.Errorf("Reason = %q, want refused", got)
	}
}
