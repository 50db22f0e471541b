package serve

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/jwttest"
)

// cachedJWT sets up kind jwt against iss on the clock c, for exp, nbf and
// iat as well as for the keys' age.
func cachedJWT(t *testing.T, iss *testIssuer, c *clock) *jwtAuth {
	t.Helper()
	j := testJWT(t, iss, c)
	j.now = c.now
	return j
}

// withoutKeys empties j's keys without a read of the set, so that only a
// token the cache answers for is accepted; the keys come back at the
// test's end.
func withoutKeys(t *testing.T, j *jwtAuth) func() {
	j.keys.mu.Lock()
	held := j.keys.keys
	j.keys.keys = nil
	j.keys.mu.Unlock()
	return func() {
		j.keys.mu.Lock()
		j.keys.keys = held
		j.keys.mu.Unlock()
	}
}

// TestJWTCache: a token verified once is accepted again without its
// signature being verified, each request getting its own copy of the
// identity, until verifiedTTL has passed; a token of the same claims with
// another signature is never answered for, nor held; a read of the key set
// that withdraws the key ends the token's entry, one that only adds a key
// does not.
func TestJWTCache(t *testing.T) {
	k1, k2 := newRSAKey(t, "k1"), newRSAKey(t, "k2")
	iss := newTestIssuer(t, k1.public())
	c := &clock{t: time.Unix(time.Now().Unix(), 0)}
	j := cachedJWT(t, iss, c)
	claims := claimsOf(iss.url(), map[string]any{"iat": c.t.Unix(), "nbf": c.t.Unix(), "exp": c.t.Add(time.Hour).Unix()})
	tok := k1.sign(t, "", claims)
	auth := func(tok string) error {
		_, err := j.Authenticate(bearerRequest(tok))
		return err
	}
	if err := auth(tok); err != nil {
		t.Fatal(err)
	}
	if n := j.cache.len(); n != 1 {
		t.Fatalf("%d tokens held after one, want 1", n)
	}

	restore := withoutKeys(t, j)
	id, err := j.Authenticate(bearerRequest(tok))
	if err != nil {
		t.Errorf("the verified token with no key held: %v, want it answered by the cache", err)
	}
	if err := auth(k1.sign(t, "", claimsOf(iss.url(), map[string]any{"sub": "bob"}))); !diag.Has(err, diag.Unauthenticated) {
		t.Errorf("another token with no key held: %v, want UNAUTHENTICATED", err)
	}
	id.Roles[0], id.Subject = "admin", "mallory"
	if again, err := j.Authenticate(bearerRequest(tok)); err != nil || again.Roles[0] != "sre" || again.Subject != "alice" {
		t.Errorf("after a request changed its identity: %+v, %v; want each request its own copy", again, err)
	}
	forged := newRSAKey(t, "k1").sign(t, "", claims)
	restore()
	if err := auth(forged); !diag.Has(err, diag.Unauthenticated) {
		t.Errorf("the same claims signed by another key: %v, want UNAUTHENTICATED", err)
	}
	if n := j.cache.len(); n != 1 {
		t.Errorf("%d tokens held after a forged one was refused, want 1", n)
	}

	// The entry lasts verifiedTTL, then the token is verified again (and
	// refused here, with no key held or published).
	restore = withoutKeys(t, j)
	iss.publish()
	c.add(verifiedTTL - time.Second)
	if err := auth(tok); err != nil {
		t.Errorf("within verifiedTTL: %v", err)
	}
	c.add(time.Second)
	if err := auth(tok); !diag.Has(err, diag.Unauthenticated) {
		t.Errorf("after verifiedTTL with no key held: %v, want it verified again and refused", err)
	}
	restore()
	iss.publish(k1.public())
	if err := auth(tok); err != nil {
		t.Fatal(err)
	}

	// A read that adds a key leaves the entries; one that withdraws k1
	// ends them, and the token is refused.
	gen, _ := j.keys.generation()
	iss.publish(k1.public(), k2.public())
	c.add(keysRefetchEvery)
	if err := auth(k2.sign(t, "", claims)); err != nil {
		t.Fatalf("k2, published: %v", err)
	}
	if now, _ := j.keys.generation(); now != gen {
		t.Errorf("a read that only added a key moved the generation %d → %d", gen, now)
	}
	iss.publish(k2.public())
	c.add(keysRefetchEvery)
	if err := auth(newRSAKey(t, "k3").sign(t, "", claims)); !diag.Has(err, diag.Unauthenticated) {
		t.Errorf("k3, never published: %v", err)
	}
	if now, _ := j.keys.generation(); now == gen {
		t.Errorf("a read that withdrew k1 left the generation at %d", gen)
	}
	if err := auth(tok); !diag.Has(err, diag.Unauthenticated) {
		t.Errorf("the cached token of withdrawn k1: %v, want UNAUTHENTICATED", err)
	}

	// Keys older than keysMaxAge end the entries too: they are read again
	// first.
	tok2 := k2.sign(t, "", claims)
	if err := auth(tok2); err != nil {
		t.Fatal(err)
	}
	iss.publish(k1.public())
	c.add(keysMaxAge)
	if err := auth(tok2); !diag.Has(err, diag.Unauthenticated) {
		t.Errorf("the cached token of k2, withdrawn, once the keys are stale: %v, want UNAUTHENTICATED", err)
	}
}

// TestJWTCacheExpiry: a token the cache answers for is refused once it is
// past its exp by more than serve.auth.clock_skew_ms, as a token verified
// afresh is.
func TestJWTCacheExpiry(t *testing.T) {
	k := newRSAKey(t, "k1")
	iss := newTestIssuer(t, k.public())
	c := &clock{t: time.Unix(time.Now().Unix(), 0)}
	j := cachedJWT(t, iss, c)
	exp := c.t.Add(10 * time.Second)
	tok := k.sign(t, "", claimsOf(iss.url(), map[string]any{"iat": c.t.Unix(), "nbf": c.t.Unix(), "exp": exp.Unix()}))
	if _, err := j.Authenticate(bearerRequest(tok)); err != nil {
		t.Fatal(err)
	}
	defer withoutKeys(t, j)()
	c.add(10*time.Second + j.skew) // at exp + clock_skew_ms: still valid
	if _, err := j.Authenticate(bearerRequest(tok)); err != nil {
		t.Errorf("at exp + clock_skew_ms: %v", err)
	}
	c.add(time.Second)
	_, err := j.Authenticate(bearerRequest(tok))
	if !diag.Has(err, diag.Unauthenticated) || !strings.Contains(err.Error(), "(exp)") {
		t.Errorf("past exp + clock_skew_ms: %v, want UNAUTHENTICATED naming exp", err)
	}
	if n := j.cache.len(); n != 0 {
		t.Errorf("%d tokens held after the expired one, want 0", n)
	}
}

// TestJWTCacheBound: however many distinct valid tokens come, the cache
// holds at most its bound, and each is still accepted; concurrent callers
// share it safely.
func TestJWTCacheBound(t *testing.T) {
	if verifiedMax != 4096 {
		t.Errorf("verifiedMax is %d, documented as 4096", verifiedMax)
	}
	k := newRSAKey(t, "k1")
	iss := newTestIssuer(t, k.public())
	j := testJWT(t, iss, nil)
	j.cache.max = 8
	toks := make([]string, 40)
	for i := range toks {
		toks[i] = k.sign(t, "", claimsOf(iss.url(), map[string]any{"sub": fmt.Sprintf("caller-%d", i)}))
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for round := range 3 {
				for i := w; i < len(toks); i += 2 {
					id, err := j.Authenticate(bearerRequest(toks[i]))
					if err != nil || id.Subject != fmt.Sprintf("caller-%d", i) {
						t.Errorf("token %d, round %d: %+v, %v", i, round, id, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if n := j.cache.len(); n > 8 {
		t.Errorf("%d tokens held, bound 8", n)
	}
	if bad := jwttest.Unsigned(t, "k1", "JWT", claimsOf(iss.url(), nil)); bad != "" {
		before := j.cache.len()
		if _, err := j.Authenticate(bearerRequest(bad)); err == nil {
			t.Error("an unsigned token was accepted")
		}
		if n := j.cache.len(); n > before {
			t.Errorf("a refused token was held (%d → %d)", before, n)
		}
	}
}
