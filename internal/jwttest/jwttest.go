// Package jwttest mints the tokens the tests of serve.auth kind jwt send:
// claims signed with a key, and the two forgeries a verifier must refuse
// whatever it is configured with — a token under alg none, and one signed
// with HMAC whose secret is the issuer's public key.
package jwttest

import (
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Sign returns claims signed with alg and key under kid, its header's typ
// being typ (JWT, at+jwt).
func Sign(t testing.TB, alg jose.SignatureAlgorithm, key any, kid, typ string, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Unsigned returns claims under alg none: a header, the claims and an
// empty signature.
func Unsigned(t testing.TB, kid, typ string, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none", "typ": typ, "kid": kid}) + "." + enc(claims) + "."
}

// HMACWithPublicKey returns claims signed with HS256 under kid, the secret
// being pub as PEM: the forgery a verifier that lets the token choose its
// algorithm falls for.
func HMACWithPublicKey(t testing.TB, pub crypto.PublicKey, kid, typ string, claims map[string]any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return Sign(t, jose.HS256, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), kid, typ, claims)
}
