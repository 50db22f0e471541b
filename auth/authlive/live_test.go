package authlive_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/secrets"
)

func env(values map[string]string) authlive.Env {
	return authlive.Env{Name: "server s", Purpose: "mcp", Secrets: secrets.Func(func(_ context.Context, r config.Ref) (secrets.Value, error) {
		v, ok := values[r.Name]
		if !ok {
			return secrets.Value{}, diag.New(diag.SecretUnresolved, "%s is not set", r)
		}
		if v == "" {
			return secrets.Value{}, diag.New(diag.SecretEmpty, "%s is empty", r)
		}
		return secrets.NewValue(v), nil
	})}
}

func ref(s string) *config.Ref { r := config.ParseRef(s); return &r }

// TestBuild covers the start-up codes of the built-in strategies: secrets
// that do not resolve, and header payloads that are not Name=value — and
// that no message repeats the payload.
func TestBuild(t *testing.T) {
	values := map[string]string{"GOOD": "X-Api-Key=canary-k3y", "BEARER": "Authorization=Bearer canary-k3y", "BAD": "canary-k3y", "SPACE": "X-Api-Key canary-k3y", "TOKEN": "canary-t0ken", "WS": "canary t0ken"}
	for _, tc := range []struct {
		name string
		spec *plan.Auth
		code diag.Code
	}{
		{"static ok", &plan.Auth{Kind: "static", Settings: map[string]any{"headers_ref": ref("${env:GOOD}")}}, ""},
		{"static not a pair", &plan.Auth{Kind: "static", Settings: map[string]any{"headers_ref": ref("${env:BAD}")}}, diag.MCPHeadersRefInvalid},
		{"static space", &plan.Auth{Kind: "static", Settings: map[string]any{"headers_ref": ref("${env:SPACE}")}}, diag.MCPHeadersRefInvalid},
		{"static value with a space", &plan.Auth{Kind: "static", Settings: map[string]any{"headers_ref": ref("${env:BEARER}")}}, diag.MCPHeadersRefInvalid},
		{"static unresolved", &plan.Auth{Kind: "static", Settings: map[string]any{"headers_ref": ref("${env:NOPE}")}}, diag.SecretUnresolved},
		{"bearer ok", &plan.Auth{Kind: "bearer", Settings: map[string]any{"token_ref": ref("${env:TOKEN}")}}, ""},
		{"bearer white space", &plan.Auth{Kind: "bearer", Settings: map[string]any{"token_ref": ref("${env:WS}")}}, diag.MCPAuthStrategyInvalid},
		{"bearer missing setting", &plan.Auth{Kind: "bearer", Settings: map[string]any{}}, diag.MCPAuthStrategyInvalid},
		{"unknown kind", &plan.Auth{Kind: "nope"}, diag.MCPAuthStrategyInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := authlive.Build(context.Background(), env(values), tc.spec)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !diag.Has(err, tc.code) {
				t.Fatalf("err = %v, want %s", err, tc.code)
			}
			if s != nil {
				t.Error("a strategy came back with the error")
			}
			if strings.Contains(err.Error(), "canary") {
				t.Errorf("error repeats a secret: %v", err)
			}
		})
	}
}

// TestHeadersOncePerRequest checks the headers a strategy sets arrive once,
// and that the caller's request is not modified.
func TestHeadersOncePerRequest(t *testing.T) {
	for _, spec := range []*plan.Auth{
		{Kind: "static", Settings: map[string]any{"headers_ref": ref("${env:H}")}},
		{Kind: "bearer", Settings: map[string]any{"token_ref": ref("${env:T}")}},
	} {
		s, err := authlive.Build(context.Background(), env(map[string]string{"H": "Authorization=Key-abc", "T": "abc"}), spec)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		rt := s.Wrap(roundTrip(func(r *http.Request) (*http.Response, error) {
			got = r.Header.Values("Authorization")
			return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
		}))
		req, _ := http.NewRequest("GET", "http://127.0.0.1/", nil)
		req.Header.Set("Authorization", "stale")
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] == "stale" {
			t.Errorf("%s: Authorization = %q", spec.Kind, got)
		}
		if req.Header.Get("Authorization") != "stale" {
			t.Errorf("%s: the caller's request was modified", spec.Kind)
		}
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
