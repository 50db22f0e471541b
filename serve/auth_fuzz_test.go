package serve

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/jwttest"
	"github.com/heddlehq/heddle/plan"
)

// FuzzJWTAuthenticate: whatever a caller sends as a bearer token, kind jwt
// answers a caller or UNAUTHENTICATED, and never repeats the token.
func FuzzJWTAuthenticate(f *testing.F) {
	key := newRSAKey(f, "k1")
	iss := newTestIssuer(f, key.public())
	j, err := newJWT(context.Background(), &plan.ServeAuth{Kind: config.ServeAuthJWT, Issuer: iss.url(), Audience: "heddle",
		Algorithms: []string{"RS256"}, ClockSkewMS: 30000, Claims: map[string]string{"roles": "groups", "tenant": "tenant_id"}},
		&Options{}, slog.New(slog.DiscardHandler))
	if err != nil {
		f.Fatal(err)
	}
	j.keys.every = 1 << 62 // no read of the key set while fuzzing
	claims := claimsOf(iss.url(), nil)
	f.Add(key.sign(f, "", claims))
	f.Add(jwttest.Unsigned(f, "k1", "JWT", claims))
	f.Add(jwttest.HMACWithPublicKey(f, key.priv.Public(), key.kid, "JWT", claims))
	f.Add("e30.e30.")
	f.Add("a.b.c")
	f.Add(`{"payload":"e30","signatures":[{"protected":"e30","signature":""}]}`)
	f.Fuzz(func(t *testing.T, token string) {
		token = strings.TrimSpace(token)
		if token == "" || strings.ContainsAny(token, "\r\n") {
			return
		}
		_, err := j.Authenticate(bearerRequest(token))
		if err == nil {
			return
		}
		if !diag.Has(err, diag.Unauthenticated) {
			t.Fatalf("%v, want UNAUTHENTICATED", err)
		}
		if len(token) >= 12 && strings.Contains(err.Error(), token) {
			t.Fatalf("the refusal holds the token: %v", err)
		}
	})
}

// FuzzClaimsMapping: whatever claims a verified token holds, the mapping
// answers a caller or UNAUTHENTICATED.
func FuzzClaimsMapping(f *testing.F) {
	j := &jwtAuth{claims: map[string]string{"subject": "sub", "roles": "realm_access.roles", "tenant": "a.b.c", "level": "level"}}
	f.Add(`{"sub":"bob","realm_access":{"roles":["sre"]},"a":{"b":{"c":"x"}},"level":3}`)
	f.Add(`{"sub":"bob","realm_access.roles":"a b","a.b":{"c":true},"level":null}`)
	f.Add(`{"sub":1,"realm_access":[],"a":"b"}`)
	f.Fuzz(func(t *testing.T, payload string) {
		var claims map[string]json.RawMessage
		if json.Unmarshal([]byte(payload), &claims) != nil {
			return
		}
		if _, err := j.identity(claims); err != nil && !diag.Has(err, diag.Unauthenticated) {
			t.Fatalf("%v, want UNAUTHENTICATED", err)
		}
	})
}
