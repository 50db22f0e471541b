package mcpfacade

import (
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
)

const (
	keyA = "0123456789abcdef0123456789abcdef-a"
	keyB = "0123456789abcdef0123456789abcdef-b"
)

// TestSealerRefuses: a state opens once, for the call it was sealed for,
// before it expires, with a key the sealer holds; anything else is
// REQUEST_STATE_INVALID saying why.
func TestSealerRefuses(t *testing.T) {
	alice := heddle.Identity{Subject: "alice", Roles: []string{"sre"}}
	args := map[string]any{"path": "/tmp/x", "n": 1.0}
	b := bind("ops", alice, "write_file", args)
	s, err := NewSealer(keyA, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	s.now = func() time.Time { return now }
	seal := func() string {
		text, err := s.seal(state{Kind: stateApproval}, b)
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	refused := func(what, text string, b binding, why string) {
		t.Helper()
		_, err := s.open(t.Context(), text, b)
		if diag.CodeOf(err) != diag.RequestStateInvalid || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %v, want REQUEST_STATE_INVALID saying %q", what, err, why)
		}
	}

	text := seal()
	if st, err := s.open(t.Context(), text, b); err != nil || st.Kind != stateApproval {
		t.Fatalf("open: %+v, %v", st, err)
	}
	refused("replayed", text, b, "used already")

	text = seal()
	// Another base64url character in the middle: the text decodes, and
	// the seal does not open.
	altered := []byte(text)
	if mid := len(altered) / 2; altered[mid] == 'A' {
		altered[mid] = 'B'
	} else {
		altered[mid] = 'A'
	}
	refused("altered", string(altered), b, "altered")
	refused("not base64", "@@@", b, "not one this server sealed")
	refused("another caller", text, bind("ops", heddle.Identity{Subject: "mallory"}, "write_file", args), "another call")
	refused("other roles", text, bind("ops", heddle.Identity{Subject: "alice"}, "write_file", args), "another call")
	refused("another tool", text, bind("ops", alice, "delete_file", args), "another call")
	refused("other arguments", text, bind("ops", alice, "write_file", map[string]any{"path": "/etc/passwd", "n": 1.0}), "another call")
	refused("another agent", text, bind("dev", alice, "write_file", args), "another call")
	if _, err := s.open(t.Context(), text, bind("ops", alice, "write_file", map[string]any{"n": 1.0, "path": "/tmp/x"})); err != nil {
		t.Errorf("the same arguments in another order: %v", err)
	}

	text = seal()
	now = now.Add(time.Minute)
	refused("expired", text, b, "expired")
	now = now.Add(-time.Minute)

	// Rotation: states sealed with the old key open while it is second.
	old := seal()
	rotated, err := NewSealer(keyB+"\n"+keyA, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rotated.now = s.now
	if _, err := rotated.open(t.Context(), old, b); err != nil {
		t.Errorf("a state of the previous key, after rotation: %v", err)
	}
	fresh, err := rotated.seal(state{Kind: stateApproval}, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.open(t.Context(), fresh, b); diag.CodeOf(err) != diag.RequestStateInvalid {
		t.Errorf("a state of the new key at a worker holding only the old: %v, want REQUEST_STATE_INVALID", err)
	}
	if _, err := RandomSealer(0).open(t.Context(), seal(), b); diag.CodeOf(err) != diag.RequestStateInvalid {
		t.Errorf("a state of another worker's own key: %v, want REQUEST_STATE_INVALID", err)
	}
}

// TestNewSealerKeys: one or two keys of MinKeyLen characters or more,
// never shown in the error.
func TestNewSealerKeys(t *testing.T) {
	for _, keys := range []string{"", "short-secret-value", keyA + " " + keyB + " " + keyA, keyA + ",tiny"} {
		_, err := NewSealer(keys, 0)
		if err == nil {
			t.Errorf("NewSealer(%q) accepted it", keys)
			continue
		}
		if keys != "" && (strings.Contains(err.Error(), "short-secret") || strings.Contains(err.Error(), "tiny") || strings.Contains(err.Error(), keyA)) {
			t.Errorf("the error shows a key: %v", err)
		}
	}
	if _, err := NewSealer(keyA+", "+keyB, 0); err != nil {
		t.Errorf("two keys: %v", err)
	}
}

// TestSealerForgetsExpired: the ids of accepted states are kept until they
// expire, then forgotten, so memory follows the states in flight.
func TestSealerForgetsExpired(t *testing.T) {
	s, err := NewSealer(keyA, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	s.now = func() time.Time { return now }
	b := bind("ops", heddle.Identity{Subject: "alice"}, "t", nil)
	accept := func() {
		t.Helper()
		text, err := s.seal(state{Kind: stateInput}, b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.open(t.Context(), text, b); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		accept()
	}
	if n := len(s.spent); n != 5 {
		t.Fatalf("%d ids kept, want 5", n)
	}
	now = now.Add(2 * time.Minute)
	accept()
	if n := len(s.spent); n != 1 {
		t.Errorf("%d ids kept after the first five expired, want 1", n)
	}
}
