package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/auth/pluginsdk"
	"golang.org/x/net/http/httpguts"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// FuzzPluginOutput feeds what a plugin process sends heddle — the answer
// to Headers or Renew, and a line it logs — through decodeHeaders and the
// log writer, with secrets known to the redactor. Neither may panic; the
// headers decoded are valid, canonical and none heddle refuses; a refusal
// is a pluginError of CodeInternal that repeats no header value; no secret
// reaches the log, in the message, a key or a value.
func FuzzPluginOutput(f *testing.F) {
	for _, s := range []struct{ answer, line, secret string }{
		{`{"headers":{"Authorization":["Bearer tok-123456"]},"expires_at":"2030-01-01T00:00:00Z"}`,
			`{"@level":"debug","@message":"token tok-123456 minted","@timestamp":"2030-01-01T00:00:00Z","id":"tok-123456"}`, "tok-123456"},
		{`{"headers":{"x-api-key":["k1","k2"],"X-Trace":[]}}`, `plain text with s3cr3t-value inside`, "s3cr3t-value"},
		{`{"headers":{"Host":["x"]}}`, `{"@message":"m","nested":{"k":"hunter2hunter2"},"list":["hunter2hunter2"]}`, "hunter2hunter2"},
		{`{"headers":{"Mcp-Session-Id":["s"]}}`, `{"hunter2hunter2":"key"}`, "hunter2hunter2"},
		{`{"headers":{"bad name":["v"]}}`, `{"@message":"x"}`, "abcdefgh"},
		{`{"headers":{"A":["line\nbreak secret-value"]}}`, `{"@message":"x","a":1,"b":true,"c":null}`, "secret-value"},
		{`{"headers":{}}`, `{}`, "abcdefgh"},
		{`{"headers":{"A":["v"]},"expires_at":"tomorrow"}`, `[1,2]`, "abcdefgh"},
		{`{"error":{"code":"UNAUTHENTICATED","message":"m"}}`, `null`, "abcdefgh"},
	} {
		f.Add([]byte(s.answer), []byte(s.line), s.secret)
	}
	f.Fuzz(func(t *testing.T, answer, line []byte, secret string) {
		var out structpb.Struct
		if protojson.Unmarshal(answer, &out) == nil {
			checkDecodeHeaders(t, &out)
		}

		red := &redactor{}
		red.add(secret, "Bearer "+secret)
		var got capture
		w := &slogWriter{log: slog.New(&got), plugin: "p", red: red}
		w.Write(append(line, '\n'))
		if len(secret) < minSecretLen || strings.Contains(redacted, secret) || strings.ContainsAny(secret, " \t\r\n") {
			return // not redacted, or not found whole once redacted
		}
		for _, piece := range got.pieces {
			if strings.Contains(piece, secret) {
				t.Fatalf("the log repeats the secret %q: %q", secret, piece)
			}
		}
	})
}

func checkDecodeHeaders(t *testing.T, out *structpb.Struct) {
	t.Helper()
	r, err := decodeHeaders(out)
	if err != nil {
		var pe *pluginError
		if !errors.As(err, &pe) || pe.Code != pluginsdk.CodeInternal {
			t.Fatalf("refused with %v, want a pluginError of %s", err, pluginsdk.CodeInternal)
		}
		for _, v := range out.GetFields()["headers"].GetStructValue().GetFields() {
			for _, item := range v.GetListValue().GetValues() {
				if s := item.GetStringValue(); len(s) >= minSecretLen && strings.Contains(err.Error(), s) && !nameHolds(out, s) {
					t.Fatalf("the refusal repeats a header value: %v", err)
				}
			}
		}
		return
	}
	if len(r.header) == 0 {
		t.Fatal("accepted no headers")
	}
	for name, vs := range r.header {
		if name != http.CanonicalHeaderKey(name) || !httpguts.ValidHeaderFieldName(name) || refusedHeader(name) {
			t.Fatalf("accepted header name %q", name)
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				t.Fatalf("accepted a value of %s that is not valid", name)
			}
		}
	}
}

// nameHolds reports whether a header name of out contains s: a refusal
// names the header.
func nameHolds(out *structpb.Struct, s string) bool {
	for name := range out.GetFields()["headers"].GetStructValue().GetFields() {
		if strings.Contains(name, s) || strings.Contains(fmt.Sprintf("%q", name), s) {
			return true
		}
	}
	return false
}

// capture is a slog.Handler that keeps each message, attribute key and
// attribute value as text of its own.
type capture struct{ pieces []string }

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }
func (c *capture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *capture) WithGroup(string) slog.Handler            { return c }

func (c *capture) Handle(_ context.Context, r slog.Record) error {
	c.pieces = append(c.pieces, strings.TrimPrefix(r.Message, "auth plugin: "))
	r.Attrs(func(a slog.Attr) bool {
		c.pieces = append(c.pieces, a.Key, a.Value.String())
		return true
	})
	return nil
}
