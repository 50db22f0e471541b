package secrets

import (
	"fmt"
	"log/slog"
)

// Redacted is what a Value prints in its place: in a log line (text or
// JSON), under any fmt verb, in an error message, and in JSON or text
// marshalled from it.
const Redacted = "[redacted]"

// Value is a resolved secret. It keeps the secret from every way Go prints
// or encodes a value: slog (LogValuer), fmt (Formatter, Stringer,
// GoStringer), encoding/json (Marshaler) and encoding (TextMarshaler) all
// see Redacted. Only Reveal returns the secret, so each place that hands it
// on — to a header, a connection string, a child's environment — says so.
//
// The secret is held behind a pointer: a struct that holds a Value in an
// unexported field and is printed with %v shows an address, not the
// secret. The zero Value holds the empty secret. A Value is immutable and
// safe for concurrent use.
type Value struct{ p *string }

// NewValue wraps s as a secret: for resolvers, and for values that stand
// in for a resolved reference (a test's fixture, an embedder's own store).
func NewValue(s string) Value { return Value{p: &s} }

// Reveal returns the secret.
func (v Value) Reveal() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

// IsZero reports whether the secret is empty.
func (v Value) IsZero() bool { return v.Reveal() == "" }

// LogValue is what slog logs: Redacted.
func (v Value) LogValue() slog.Value { return slog.StringValue(Redacted) }

// String returns Redacted, never the secret.
func (v Value) String() string { return Redacted }

// GoString returns Redacted (%#v), never the secret.
func (v Value) GoString() string { return Redacted }

// Format prints Redacted under every verb, so %x, %q or %d do not reach
// the secret through reflection either.
func (v Value) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(Redacted)) }

// MarshalJSON encodes Redacted as a JSON string.
func (v Value) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText returns Redacted.
func (v Value) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

var (
	_ slog.LogValuer = Value{}
	_ fmt.Formatter  = Value{}
	_ fmt.Stringer   = Value{}
	_ fmt.GoStringer = Value{}
)
