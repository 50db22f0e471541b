package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestRefreshAt(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		ttl, want time.Duration // want: after now
	}{
		{time.Hour, time.Hour - MaxSkew},
		{time.Minute, 54 * time.Second},
		{time.Second, 900 * time.Millisecond},
		{-time.Second, 0},
	} {
		if got := refreshAt(now, now.Add(c.ttl)).Sub(now); got != c.want {
			t.Errorf("ttl %s: renew after %s, want %s", c.ttl, got, c.want)
		}
	}
	if !refreshAt(now, time.Time{}).IsZero() {
		t.Error("headers with no expiry get a refresh time")
	}
}

func TestBackoff(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, backoff(n))
	}
	want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if backoff(100) != 30*time.Second {
		t.Errorf("backoff(100) = %s, want the 30s cap", backoff(100))
	}
}

func TestRedactor(t *testing.T) {
	var r redactor
	r.add("Bearer tok_abcdef123", "short", "s3cr3t-value")
	got := r.redact("sent Bearer tok_abcdef123; token tok_abcdef123; secret s3cr3t-value; short stays; a Bearer scheme stays")
	want := "sent [REDACTED]; token [REDACTED]; secret [REDACTED]; short stays; a Bearer scheme stays"
	if got != want {
		t.Errorf("redact = %q, want %q", got, want)
	}
}

func TestDecodeHeaders(t *testing.T) {
	mk := func(h map[string]any, exp string) *structpb.Struct {
		m := map[string]any{"headers": h}
		if exp != "" {
			m["expires_at"] = exp
		}
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	r, err := decodeHeaders(mk(map[string]any{"authorization": []any{"Bearer x"}}, "2030-01-01T00:00:00Z"))
	if err != nil || r.header.Get("Authorization") != "Bearer x" || r.expiresAt.Year() != 2030 {
		t.Fatalf("decode = %+v, %v", r, err)
	}
	for name, h := range map[string]map[string]any{
		"bad name":   {"Bad Name": []any{"v"}},
		"line break": {"X-Key": []any{"v\r\nX-Evil: 1"}},
		"framing":    {"Content-Length": []any{"1"}},
		"mcp's own":  {"Mcp-Session-Id": []any{"s"}},
		"none":       {},
	} {
		if _, err := decodeHeaders(mk(h, "")); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "X-Evil") {
			t.Errorf("%s: error repeats the value: %v", name, err)
		}
	}
	if _, err := decodeHeaders(mk(map[string]any{"X-Key": []any{"v"}}, "tomorrow")); err == nil {
		t.Error("a malformed expires_at was accepted")
	}
}
