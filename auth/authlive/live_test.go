package authlive_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

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

// TestRotatedSecret: when a server answers 401, the static and bearer
// strategies read their secret again and, if it changed, send the request
// once more with it — body and all; a 401 with the secret unchanged is
// passed on, and reading again happens at most once a second however many
// requests meet the 401.
func TestRotatedSecret(t *testing.T) {
	for _, tc := range []struct {
		spec     *plan.Auth
		key, old string
		rotated  string
		header   string
	}{
		{&plan.Auth{Kind: "bearer", Settings: map[string]any{"token_ref": ref("${env:T}")}}, "T", "t0ken-old", "t0ken-new", "Bearer t0ken-new"},
		{&plan.Auth{Kind: "static", Settings: map[string]any{"headers_ref": ref("${env:H}")}}, "H", "X-Api-Key=k3y-old", "X-Api-Key=k3y-new", "k3y-new"},
	} {
		t.Run(tc.spec.Kind, func(t *testing.T) {
			var mu sync.Mutex
			values := map[string]string{tc.key: tc.old}
			reads := 0
			e := env(nil)
			e.Secrets = secrets.Func(func(_ context.Context, r config.Ref) (secrets.Value, error) {
				mu.Lock()
				defer mu.Unlock()
				reads++
				return secrets.NewValue(values[r.Name]), nil
			})
			s, err := authlive.Build(context.Background(), e, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var sent []string
			rt := s.Wrap(roundTrip(func(r *http.Request) (*http.Response, error) {
				got := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				sent = append(sent, got+" "+string(body))
				mu.Unlock()
				if got != tc.header {
					return &http.Response{StatusCode: 401, Body: io.NopCloser(strings.NewReader("no"))}, nil
				}
				return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
			}))
			post := func() int {
				req, _ := http.NewRequest("POST", "http://127.0.0.1/mcp", strings.NewReader(`{"id":1}`))
				res, err := rt.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				return res.StatusCode
			}
			if got := post(); got != 401 {
				t.Fatalf("before the rotation: %d, want the server's 401 passed on", got)
			}
			if got := post(); got != 401 || reads != 2 {
				t.Errorf("a second 401 within a second: %d, %d reads of the secret; want 401, and the build's read and the first 401's alone", got, reads)
			}
			mu.Lock()
			values[tc.key] = tc.rotated
			mu.Unlock()
			time.Sleep(time.Second) // the next read is allowed
			sent = nil
			if got := post(); got != 200 {
				t.Fatalf("after the rotation: %d, want 200", got)
			}
			if len(sent) != 2 || !strings.HasSuffix(sent[1], ` {"id":1}`) || !strings.HasPrefix(sent[1], tc.header) {
				t.Errorf("requests sent: %q; want the refused one, then one with the new secret and the same body", sent)
			}
			if got := post(); got != 200 || reads != 3 {
				t.Errorf("the next request: %d after %d reads; want 200 with no read since the rotation's", got, reads)
			}
		})
	}
}
