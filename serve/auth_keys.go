package serve

import (
	"bytes"
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/internal/netwhy"
)

const (
	// fetchTimeout bounds one read of a discovery document or key set.
	fetchTimeout = 10 * time.Second
	// maxDocumentBytes bounds what a discovery document or key set may
	// weigh.
	maxDocumentBytes = 1 << 20
	// keysRefetchEvery is how often, at most, the keys are read again
	// because a token names a key id the cache does not hold: key rotation
	// is picked up within that time, and a caller sending made-up key ids
	// makes the worker read the issuer's keys no more often.
	keysRefetchEvery = 5 * time.Second
	// keysMaxAge is how long the keys are used before they are read again
	// on the next token, so that a key the issuer withdrew stops being
	// accepted. When the issuer cannot be reached, the keys held are kept.
	keysMaxAge = 15 * time.Minute
)

// keySet is the issuer's public signing keys, read from its JWK set and
// cached. It is go-oidc's KeySet: a token whose key id the cache does not
// hold makes it read the set again (key rotation), at most once every
// keysRefetchEvery, and concurrent tokens wait for one read. It is safe
// for concurrent use.
type keySet struct {
	url    string // never in a message or a log: only its host
	host   string
	client *http.Client
	algs   []jose.SignatureAlgorithm
	log    *slog.Logger
	now    func() time.Time
	every  time.Duration
	maxAge time.Duration

	fetch sync.Mutex // held while reading the set: one read at a time

	mu      sync.Mutex // guards the fields below
	keys    []jose.JSONWebKey
	gen     uint64    // counts the reads that dropped or changed a key held
	fetched time.Time // the last read that succeeded
	tried   time.Time // the last read
}

func newKeySet(jwksURL string, client *http.Client, algs []jose.SignatureAlgorithm, log *slog.Logger) *keySet {
	return &keySet{url: jwksURL, host: hostOf(jwksURL), client: client, algs: algs, log: log,
		now: time.Now, every: keysRefetchEvery, maxAge: keysMaxAge}
}

// load reads the set at start-up; it is SERVE_AUTH_UNREACHABLE when the
// set cannot be read or holds no public signing key.
func (k *keySet) load(ctx context.Context) error {
	keys, err := k.read(ctx)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return diag.New(diag.ServeAuthUnreachable, "serve.auth: the key set at %s holds no public signing key", k.host)
	}
	k.mu.Lock()
	k.keys, k.fetched, k.tried = keys, k.now(), k.now()
	k.mu.Unlock()
	return nil
}

func (k *keySet) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.keys)
}

// generation returns the keys' generation, which a read of the set that
// drops or changes a key held moves on, and whether the keys are fresh
// (younger than maxAge). Tokens verified under another generation, or while
// the keys are stale, are verified again.
func (k *keySet) generation() (gen uint64, fresh bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.gen, k.now().Sub(k.fetched) < k.maxAge
}

// sigCheckKey is the context key of the sigCheck a verification fills in.
type sigCheckKey struct{}

// sigCheck is what VerifySignature found: the refusal, or that the
// signature verified. raw and jws are the token the verification is of and
// its parse (with any algorithm), which VerifySignature uses instead of
// parsing raw again.
type sigCheck struct {
	raw string
	jws *jose.JSONWebSignature

	err      error
	verified bool
}

// VerifySignature returns the payload of jwt when one of the issuer's keys
// verifies its signature. go-oidc calls it after checking the algorithm.
func (k *keySet) VerifySignature(ctx context.Context, token string) ([]byte, error) {
	sc, _ := ctx.Value(sigCheckKey{}).(*sigCheck)
	var parsed *jose.JSONWebSignature
	if sc != nil && sc.raw == token {
		parsed = sc.jws
	}
	payload, err := k.verify(ctx, token, parsed)
	if sc != nil {
		sc.err, sc.verified = err, err == nil
	}
	return payload, err
}

// verify checks token's signature; parsed, when not nil, is token already
// parsed, and is held to the same algorithms as a parse of k's own.
func (k *keySet) verify(ctx context.Context, token string, parsed *jose.JSONWebSignature) ([]byte, error) {
	jws := parsed
	if jws == nil {
		var err error
		if jws, err = jose.ParseSignedCompact(token, k.algs); err != nil {
			jws = nil
		}
	}
	if jws == nil || len(jws.Signatures) != 1 || !slices.Contains(k.algs, jose.SignatureAlgorithm(jws.Signatures[0].Header.Algorithm)) {
		return nil, invalidToken("the token is not a JWT with one signature of an algorithm serve.auth.algorithms allows")
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, stale := k.cached()
	if stale {
		keys = k.refetch(ctx)
	}
	payload, known, ok := tryKeys(jws, keys, kid)
	if ok {
		return payload, nil
	}
	if !known {
		// A key id the cache does not hold: the issuer may have rotated
		// its keys since they were read.
		keys = k.refetch(ctx)
		if payload, known, ok = tryKeys(jws, keys, kid); ok {
			return payload, nil
		}
	}
	switch {
	case known:
		return nil, invalidToken("the token's signature does not verify with the issuer's key it names (kid)")
	case kid == "":
		return nil, invalidToken("the token names no key (kid), and no key of the issuer verifies its signature")
	}
	return nil, invalidToken("the token names a key (kid) the issuer's key set does not hold (read again at most every %s)", k.every)
}

// cached returns the keys held, and whether they are old enough to be read
// again.
func (k *keySet) cached() ([]jose.JSONWebKey, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys, k.now().Sub(k.fetched) >= k.maxAge
}

// refetch reads the set again unless it was read less than k.every ago,
// and returns the keys held then. A read that fails keeps the keys held.
func (k *keySet) refetch(ctx context.Context) []jose.JSONWebKey {
	k.fetch.Lock()
	defer k.fetch.Unlock()
	k.mu.Lock()
	if k.now().Sub(k.tried) < k.every {
		keys := k.keys
		k.mu.Unlock()
		return keys
	}
	k.tried = k.now()
	k.mu.Unlock()

	// The read is everyone's, not the request's that started it: a
	// caller hanging up does not cancel it for the others waiting.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	keys, err := k.read(rctx)
	if err == nil && len(keys) == 0 {
		err = fmt.Errorf("the key set at %s holds no public signing key", k.host)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		k.log.Warn("serve.auth: the issuer's keys could not be read again; the keys held are kept", "error", err.Error(), "keys", len(k.keys))
		return k.keys
	}
	if !holdsAll(keys, k.keys) {
		k.gen++
	}
	k.keys, k.fetched = keys, k.now()
	return keys
}

// holdsAll reports whether every key of old is in keys, unchanged: the
// same id, algorithm and public key.
func holdsAll(keys, old []jose.JSONWebKey) bool {
	for i := range old {
		if !slices.ContainsFunc(keys, func(key jose.JSONWebKey) bool { return sameKey(&key, &old[i]) }) {
			return false
		}
	}
	return true
}

func sameKey(a, b *jose.JSONWebKey) bool {
	if a.KeyID != b.KeyID || a.Algorithm != b.Algorithm || a.Use != b.Use {
		return false
	}
	ta, err := a.Thumbprint(crypto.SHA256)
	if err != nil {
		return false
	}
	tb, err := b.Thumbprint(crypto.SHA256)
	return err == nil && bytes.Equal(ta, tb)
}

// tryKeys verifies jws with the keys that may have signed it: the one kid
// names, or every key when it names none. known reports whether a key of
// that id is held.
func tryKeys(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) (payload []byte, known, ok bool) {
	alg := jws.Signatures[0].Header.Algorithm
	for i := range keys {
		key := &keys[i]
		if kid != "" && key.KeyID != kid {
			continue
		}
		known = kid != ""
		if key.Algorithm != "" && key.Algorithm != alg {
			continue
		}
		if p, err := jws.Verify(key.Key); err == nil {
			return p, known, true
		}
	}
	return nil, known, false
}

// read fetches the set and keeps its public signing keys: keys for
// another use (enc), symmetric keys and keys of a type go-jose does not
// know are left out, as RFC 7517 section 5 says.
func (k *keySet) read(ctx context.Context) ([]jose.JSONWebKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := getJSON(ctx, k.client, k.url, &set); err != nil {
		return nil, diag.Wrap(diag.ServeAuthUnreachable, err, "serve.auth: the issuer's key set could not be read: %v", err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if json.Unmarshal(raw, &key) != nil || !key.Valid() || (key.Use != "" && key.Use != "sig") {
			continue
		}
		if !key.IsPublic() {
			// A private key published by mistake still verifies by its
			// public half; a symmetric key has none and is never used.
			pub := key.Public()
			if !pub.Valid() {
				continue
			}
			key = pub
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// discover reads the issuer's OpenID discovery document and returns its
// jwks_uri. The document must name the issuer exactly as configured (OpenID
// Connect Discovery section 4.3), and its jwks_uri must be https (or http
// on loopback), as serve.auth.jwks_url would have to be.
func discover(ctx context.Context, client *http.Client, issuer string) (string, error) {
	u := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := getJSON(ctx, client, u, &doc); err != nil {
		return "", diag.Wrap(diag.ServeAuthUnreachable, err, "serve.auth.issuer: OpenID discovery failed: %v", err)
	}
	if doc.Issuer != issuer {
		named := "an issuer that is not a URL without userinfo or query"
		if !grants.CheckURL(doc.Issuer, diag.ServeAuthUnreachable, "issuer").HasErrors() {
			named = fmt.Sprintf("the issuer %q", doc.Issuer)
		}
		return "", diag.New(diag.ServeAuthUnreachable, "serve.auth.issuer: the discovery document at %s names %s, not serve.auth.issuer: write the issuer exactly as the tokens' iss names it", hostOf(u), named)
	}
	if doc.JWKSURI == "" {
		return "", diag.New(diag.ServeAuthUnreachable, "serve.auth.issuer: the discovery document at %s names no jwks_uri: set serve.auth.jwks_url", hostOf(u))
	}
	if grants.CheckURL(doc.JWKSURI, diag.ServeAuthUnreachable, "jwks_uri").HasErrors() {
		return "", diag.New(diag.ServeAuthUnreachable, "serve.auth.issuer: the discovery document at %s names a jwks_uri that is not https (plain http only on loopback), or carries userinfo or a query", hostOf(u))
	}
	return doc.JWKSURI, nil
}

// getJSON reads the JSON document at u into v. Its errors name the host,
// never the URL, and say why in netwhy's words.
func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	host := hostOf(u)
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return errors.New("the URL cannot be requested")
	}
	req.Header.Set("Accept", "application/json")
	res, err := client.Do(req)
	if err != nil {
		if why, _ := netwhy.Reason(err, host); why != "" {
			return errors.New(why)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("the exchange with %s timed out, or start-up was cancelled", host)
		}
		return fmt.Errorf("the request to %s failed", host)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered HTTP %d", host, res.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxDocumentBytes+1))
	switch {
	case err != nil:
		return fmt.Errorf("reading the answer of %s failed", host)
	case len(b) > maxDocumentBytes:
		return fmt.Errorf("%s answered more than %d bytes", host, maxDocumentBytes)
	case json.Unmarshal(b, v) != nil:
		return fmt.Errorf("%s answered something that is not a JSON object of the expected shape", host)
	}
	return nil
}

// hostOf is the host:port of u, what messages name instead of a URL.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "the configured URL"
	}
	return p.Host
}

var _ oidc.KeySet = (*keySet)(nil)
