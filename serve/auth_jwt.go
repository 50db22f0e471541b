package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
)

// asymmetric are the signature algorithms a JWT may be verified with: the
// compiler refuses any other in serve.auth.algorithms, and the verifier
// refuses them again. none proves nothing, and an HMAC key would be the
// issuer's public key, which anyone can read.
var asymmetric = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// named are the algorithms a token's header is read with, so that a refusal
// can name the algorithm it was refused for: every JWS algorithm, none
// included. A token is verified only with the algorithms allowed.
var named = append([]jose.SignatureAlgorithm{"none", jose.HS256, jose.HS384, jose.HS512}, asymmetric...)

// jwtAuth is serve.auth kind jwt: bearer JWTs signed by the issuer's keys
// (go-oidc's verifier over a key set of serve's own, which reads the keys
// again on rotation), for serve.auth.audience, within their validity with
// serve.auth.clock_skew_ms of leeway. The identity is read from the
// token's claims as serve.auth.claims maps them. A token that passed every
// check is held in cache (verified) for its next calls. It is safe for
// concurrent use.
type jwtAuth struct {
	issuer   string
	audience string
	algs     []jose.SignatureAlgorithm
	skew     time.Duration
	claims   map[string]string // identity field (subject, roles, a claim) → token claim
	keys     *keySet
	verifier *oidc.IDTokenVerifier
	cache    *verified
	now      func() time.Time
}

// newJWT reads the issuer's keys, by OpenID discovery unless
// serve.auth.jwks_url is set. A worker that cannot read them fails to start
// with SERVE_AUTH_UNREACHABLE: discovery is not left to the first call,
// which would answer every caller 401 while the worker reports ready.
func newJWT(ctx context.Context, a *plan.ServeAuth, opts *Options, log *slog.Logger) (*jwtAuth, error) {
	j := &jwtAuth{issuer: a.Issuer, audience: a.Audience, skew: time.Duration(a.ClockSkewMS) * time.Millisecond,
		claims: a.Claims, cache: newVerified(), now: time.Now}
	if len(a.Algorithms) == 0 {
		j.algs = []jose.SignatureAlgorithm{jose.RS256}
	}
	for _, alg := range a.Algorithms {
		if !slices.Contains(asymmetric, jose.SignatureAlgorithm(alg)) {
			return nil, diag.New(diag.ServeAuthInvalid, "serve.auth.algorithms: %q is not accepted: only asymmetric signature algorithms are (none and the HMAC algorithms never are)", alg)
		}
		j.algs = append(j.algs, jose.SignatureAlgorithm(alg))
	}
	if j.claims["subject"] == "" {
		j.claims = maps.Clone(j.claims)
		if j.claims == nil {
			j.claims = map[string]string{}
		}
		j.claims["subject"] = "sub"
	}
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: fetchTimeout}
	}
	jwksURL := a.JWKSURL
	if jwksURL == "" {
		u, err := discover(ctx, client, a.Issuer)
		if err != nil {
			return nil, err
		}
		jwksURL = u
	}
	j.keys = newKeySet(jwksURL, client, j.algs, log)
	if err := j.keys.load(ctx); err != nil {
		return nil, err
	}
	j.verifier = oidc.NewVerifier(a.Issuer, j.keys, &oidc.Config{
		ClientID:             a.Audience,
		SupportedSigningAlgs: algNames(j.algs),
		// exp, nbf and iat are checked below, with serve.auth.clock_skew_ms
		// of leeway (go-oidc allows none on exp, and 5 minutes on nbf).
		SkipExpiryCheck: true,
	})
	log.Info("serve.auth kind jwt: verifying tokens with the issuer's keys", "issuer_host", hostOf(a.Issuer), "keys", j.keys.count(), "algorithms", algNames(j.algs))
	return j, nil
}

func algNames(algs []jose.SignatureAlgorithm) []string {
	out := make([]string, len(algs))
	for i, a := range algs {
		out[i] = string(a)
	}
	return out
}

func (j *jwtAuth) Challenge() string { return realm }

func (j *jwtAuth) Authenticate(r *http.Request) (heddle.Identity, error) {
	raw, err := bearer(r, "a JWT of serve.auth.issuer for serve.auth.audience")
	if err != nil {
		return heddle.Identity{}, err
	}
	// A token verified a moment ago under the same keys is not parsed or
	// verified again; its validity in time is checked on every call.
	sum := digest(raw)
	gen, fresh := j.keys.generation()
	if fresh {
		if e, ok := j.cache.get(sum, gen, j.now()); ok {
			if err := j.checkTimes(e.times, j.now()); err != nil {
				j.cache.drop(sum)
				return heddle.Identity{}, err
			}
			return copyIdentity(e.id), nil
		}
	}
	claims, times, err := j.verify(r.Context(), raw)
	if err != nil {
		return heddle.Identity{}, err
	}
	id, err := j.identity(claims)
	if err != nil {
		return heddle.Identity{}, err
	}
	// gen was read before the verification: if the keys were replaced
	// meanwhile, the entry is of an older generation and is never used.
	j.cache.put(sum, verifiedEntry{id: id, times: times, gen: gen, added: j.now()})
	return copyIdentity(id), nil
}

// withToken returns ctx carrying r's bearer token, the JWT Authenticate
// verified, for the one reader that may see it (heddle.WithCallerToken):
// the strategy of a server called as the caller, which exchanges it at
// the identity provider for a token of that server's. It is never sent
// on, logged or kept.
func (j *jwtAuth) withToken(ctx context.Context, r *http.Request) context.Context {
	raw, err := bearer(r, "")
	if err != nil {
		return ctx
	}
	return heddle.WithCallerToken(ctx, raw)
}

// verify checks raw in the order a reader would: its form and algorithm,
// its signature, its issuer and audience, then its validity in time; the
// error of the first check that fails says which it was, never the token.
// times are the token's exp, nbf and iat.
func (j *jwtAuth) verify(ctx context.Context, raw string) (claims map[string]json.RawMessage, times jwt.Claims, err error) {
	var none jwt.Claims
	jws, err := jose.ParseSignedCompact(raw, named)
	if err != nil {
		var unexpected *jose.ErrUnexpectedSignatureAlgorithm
		if errors.As(err, &unexpected) {
			return nil, none, invalidToken("the token's alg is not a JWS signature algorithm")
		}
		return nil, none, invalidToken("the bearer token is not a JWT (three base64url parts, header.payload.signature)")
	}
	alg := jose.SignatureAlgorithm(jws.Signatures[0].Header.Algorithm)
	if !slices.Contains(j.algs, alg) {
		return nil, none, invalidToken("the token is signed with alg %s, which serve.auth.algorithms (%s) does not allow; none and the HMAC algorithms never are", alg, strings.Join(algNames(j.algs), ", "))
	}
	// go-oidc checks the algorithm again, asks the key set for the
	// signature, then checks iss and aud. The key set verifies the token as
	// parsed here, and leaves why it refused the signature in sig, which
	// go-oidc's error only quotes.
	sig := &sigCheck{raw: raw, jws: jws}
	tok, err := j.verifier.Verify(context.WithValue(ctx, sigCheckKey{}, sig), raw)
	if err != nil {
		if sig.err != nil {
			return nil, none, sig.err
		}
		if !sig.verified {
			return nil, none, invalidToken("the token's signature could not be checked")
		}
		return nil, none, j.claimsError(jws.UnsafePayloadWithoutVerification())
	}
	var c jwt.Claims
	if err := tok.Claims(&c); err != nil {
		return nil, none, invalidToken("the token's exp, nbf or iat is not a number of seconds")
	}
	if c.Expiry == nil {
		return nil, none, invalidToken("the token has no exp: a token that never expires is not accepted")
	}
	times = jwt.Claims{Expiry: c.Expiry, NotBefore: c.NotBefore, IssuedAt: c.IssuedAt}
	if err := j.checkTimes(times, j.now()); err != nil {
		return nil, none, err
	}
	if err := tok.Claims(&claims); err != nil {
		return nil, none, invalidToken("the token's payload is not a JSON object")
	}
	return claims, times, nil
}

// checkTimes checks a token's exp, nbf and iat at now, with
// serve.auth.clock_skew_ms of leeway: on its verification, and again each
// time the cache of verified tokens answers for it.
func (j *jwtAuth) checkTimes(c jwt.Claims, now time.Time) error {
	switch err := c.ValidateWithLeeway(jwt.Expected{Time: now}, j.skew); {
	case errors.Is(err, jwt.ErrExpired):
		return invalidToken("the token expired at %s (exp), more than serve.auth.clock_skew_ms (%s) ago", c.Expiry.Time().UTC().Format(time.RFC3339), j.skew)
	case errors.Is(err, jwt.ErrNotValidYet):
		return invalidToken("the token is not valid before %s (nbf), more than serve.auth.clock_skew_ms (%s) from now", c.NotBefore.Time().UTC().Format(time.RFC3339), j.skew)
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return invalidToken("the token was issued at %s (iat), more than serve.auth.clock_skew_ms (%s) from now", c.IssuedAt.Time().UTC().Format(time.RFC3339), j.skew)
	case err != nil:
		return invalidToken("the token's validity could not be checked")
	}
	return nil
}

// claimsError says why go-oidc refused a token whose signature verified:
// its issuer or audience. payload is authentic (the signature verified).
func (j *jwtAuth) claimsError(payload []byte) error {
	var c jwt.Claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return invalidToken("the token's claims are not a JWT claims set (iss, aud, exp, nbf and iat of the wrong type)")
	}
	if c.Issuer != j.issuer {
		return invalidToken("the token was issued by another issuer than serve.auth.issuer (iss)")
	}
	if !c.Audience.Contains(j.audience) {
		return invalidToken("the token is not for serve.auth.audience %q (aud)", j.audience)
	}
	return invalidToken("the token's claims could not be read")
}

// identity maps verified claims to the caller, as serve.auth.claims says.
func (j *jwtAuth) identity(claims map[string]json.RawMessage) (heddle.Identity, error) {
	var id heddle.Identity
	for _, field := range slices.Sorted(maps.Keys(j.claims)) {
		name := j.claims[field]
		v, ok := lookupClaim(claims, name)
		switch field {
		case "subject":
			var s string
			if !ok || json.Unmarshal(v, &s) != nil || s == "" {
				return heddle.Identity{}, invalidToken("the token's %s claim (serve.auth.claims.subject) is missing, empty or not a string", name)
			}
			id.Subject = s
		case "roles":
			if !ok {
				continue
			}
			roles, err := rolesOf(v)
			if err != nil {
				return heddle.Identity{}, invalidToken("the token's %s claim (serve.auth.claims.roles) is neither a list of strings nor a space-separated string", name)
			}
			id.Roles = roles
		default:
			if !ok {
				continue
			}
			s, isValue, err := scalarOf(v)
			if err != nil {
				return heddle.Identity{}, invalidToken("the token's %s claim (serve.auth.claims.%s) is a list or an object, not a string, number or boolean", name, field)
			}
			if !isValue {
				continue
			}
			if id.Claims == nil {
				id.Claims = map[string]string{}
			}
			id.Claims[field] = s
		}
	}
	return id, nil
}

// lookupClaim finds the token claim name. A top-level claim of that exact
// name wins (Auth0's namespaced https://example.com/roles); otherwise a
// dotted name is a path into nested objects (Keycloak's realm_access.roles).
func lookupClaim(claims map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	if v, ok := claims[name]; ok && string(v) != "null" {
		return v, true
	}
	for i := 0; i < len(name); i++ {
		if name[i] != '.' {
			continue
		}
		var inner map[string]json.RawMessage
		if v, ok := claims[name[:i]]; ok && json.Unmarshal(v, &inner) == nil {
			if v, ok := lookupClaim(inner, name[i+1:]); ok {
				return v, true
			}
		}
	}
	return nil, false
}

// rolesOf reads a roles claim: a list of strings, or one space-separated
// string (OAuth's scope form).
func rolesOf(v json.RawMessage) ([]string, error) {
	var list []string
	if err := json.Unmarshal(v, &list); err == nil {
		return slices.DeleteFunc(list, func(s string) bool { return s == "" }), nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, err
	}
	return strings.Fields(s), nil
}

// scalarOf reads an identity claim: a string as it is, a number or a
// boolean as JSON writes it. isValue is false for null.
func scalarOf(v json.RawMessage) (s string, isValue bool, err error) {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return "", false, err
	}
	switch x := x.(type) {
	case nil:
		return "", false, nil
	case string:
		return x, true, nil
	case json.Number:
		return x.String(), true, nil
	case bool:
		if x {
			return "true", true, nil
		}
		return "false", true, nil
	}
	return "", false, errors.New("not a scalar")
}

var _ Authenticator = (*jwtAuth)(nil)
var _ tokenLender = (*jwtAuth)(nil)
