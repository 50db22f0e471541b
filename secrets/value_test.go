package secrets_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/secrets"
)

const canary = "sk-value-canary-7Hq2"

// TestValueRedacts: a Value prints as the marker wherever Go prints or
// encodes it, on its own, inside a struct, a slice, a map or an error, and
// only Reveal returns the secret.
func TestValueRedacts(t *testing.T) {
	v := secrets.NewValue(canary)
	if got := v.Reveal(); got != canary {
		t.Fatalf("Reveal() = %q", got)
	}
	type holder struct {
		Token  secrets.Value
		hidden secrets.Value
	}
	h := holder{Token: v, hidden: v}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10s", "%T"} {
		for name, arg := range map[string]any{"value": v, "pointer": &v, "struct": h, "struct pointer": &h,
			"slice": []secrets.Value{v}, "map": map[string]secrets.Value{"k": v}} {
			if got := fmt.Sprintf(verb, arg); strings.Contains(got, canary) {
				t.Errorf("%s of a %s = %q: shows the secret", verb, name, got)
			}
		}
	}
	if got := fmt.Sprint(v); got != secrets.Redacted {
		t.Errorf("fmt.Sprint = %q, want %q", got, secrets.Redacted)
	}
	if got := v.String(); got != secrets.Redacted {
		t.Errorf("String() = %q", got)
	}
	if got := v.GoString(); got != secrets.Redacted {
		t.Errorf("GoString() = %q", got)
	}

	err := fmt.Errorf("connect: %w", fmt.Errorf("token %v refused", v))
	if msg := errors.Unwrap(err).Error() + err.Error(); strings.Contains(msg, canary) {
		t.Errorf("error = %q: shows the secret", msg)
	}

	for name, arg := range map[string]any{"value": v, "struct": h, "map": map[string]secrets.Value{"k": v}} {
		b, err := json.Marshal(arg)
		if err != nil {
			t.Fatalf("json.Marshal(%s): %v", name, err)
		}
		if bytes.Contains(b, []byte(canary)) || !bytes.Contains(b, []byte(secrets.Redacted)) {
			t.Errorf("json.Marshal(%s) = %s", name, b)
		}
	}
	if b, _ := v.MarshalText(); string(b) != secrets.Redacted {
		t.Errorf("MarshalText() = %q", b)
	}
	// As a map key, encoding/json uses MarshalText.
	if b, _ := json.Marshal(map[secrets.Value]int{v: 1}); bytes.Contains(b, []byte(canary)) {
		t.Errorf("json.Marshal(map key) = %s", b)
	}
}

// TestValueInLogs: slog's text and JSON handlers log the marker, at every
// level, as an attribute, inside a group, in a struct and in an error.
func TestValueInLogs(t *testing.T) {
	v := secrets.NewValue(canary)
	for name, newHandler := range map[string]func(*bytes.Buffer) slog.Handler{
		"text": func(b *bytes.Buffer) slog.Handler {
			return slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})
		},
		"json": func(b *bytes.Buffer) slog.Handler {
			return slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})
		},
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(newHandler(&buf)).With("token", v)
			log.Debug("debug", "value", v, "pointer", &v)
			log.Info("info", slog.Group("g", "value", v))
			log.Warn("warn", "struct", struct{ Token secrets.Value }{v}, "list", []secrets.Value{v})
			log.Error("error", "err", fmt.Errorf("refused %v", v), "any", slog.AnyValue(v))
			out := buf.String()
			if strings.Contains(out, canary) {
				t.Fatalf("the log shows the secret:\n%s", out)
			}
			if n := strings.Count(out, secrets.Redacted); n < 10 {
				t.Errorf("the log has %d markers, want at least 10:\n%s", n, out)
			}
		})
	}
}

// TestValueZero: the zero Value is the empty secret, and prints the marker
// like any other.
func TestValueZero(t *testing.T) {
	var v secrets.Value
	if v.Reveal() != "" || !v.IsZero() || !secrets.NewValue("").IsZero() || secrets.NewValue("x").IsZero() {
		t.Errorf("zero Value: Reveal() = %q, IsZero() = %v", v.Reveal(), v.IsZero())
	}
	if got := fmt.Sprint(v); got != secrets.Redacted {
		t.Errorf("fmt.Sprint(zero) = %q", got)
	}
}
