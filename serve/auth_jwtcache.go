package serve

import (
	"crypto/sha256"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/heddlehq/heddle"
)

const (
	// verifiedTTL is how long a verified token is held in the cache of
	// verified tokens: within it, the same token again is not parsed or
	// its signature verified, only its exp, nbf and iat checked again.
	verifiedTTL = 60 * time.Second
	// verifiedMax bounds how many verified tokens are held; a token
	// verified when the cache is full takes the place of another.
	verifiedMax = 4096
)

// verified is kind jwt's cache of tokens that passed every check, keyed by
// the SHA-256 digest of the token (never the token itself). An entry is
// used only while it is younger than ttl, the token is still within its
// validity, and the key set has been neither replaced nor gone stale since
// (keySet.generation). A token that fails a check is never held. It is
// safe for concurrent use.
type verified struct {
	ttl time.Duration
	max int

	mu      sync.Mutex
	entries map[[sha256.Size]byte]verifiedEntry
}

type verifiedEntry struct {
	id    heddle.Identity
	times jwt.Claims // exp, nbf and iat alone
	gen   uint64     // the key set's generation the token was verified under
	added time.Time
}

func newVerified() *verified {
	return &verified{ttl: verifiedTTL, max: verifiedMax, entries: map[[sha256.Size]byte]verifiedEntry{}}
}

// get returns the entry of sum when it is younger than ttl at now and was
// verified under the key set's generation gen; an entry too old or of
// another generation is dropped.
func (v *verified) get(sum [sha256.Size]byte, gen uint64, now time.Time) (verifiedEntry, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.entries[sum]
	if !ok {
		return verifiedEntry{}, false
	}
	if e.gen != gen || now.Sub(e.added) >= v.ttl || now.Before(e.added) {
		delete(v.entries, sum)
		return verifiedEntry{}, false
	}
	return e, true
}

// put holds e under sum, making room by dropping another entry (whichever
// the map's iteration yields first) when the cache is full.
func (v *verified) put(sum [sha256.Size]byte, e verifiedEntry) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.entries[sum]; !ok && len(v.entries) >= v.max {
		for k := range v.entries {
			delete(v.entries, k)
			if len(v.entries) < v.max {
				break
			}
		}
	}
	v.entries[sum] = e
}

func (v *verified) drop(sum [sha256.Size]byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.entries, sum)
}

func (v *verified) len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.entries)
}

// copyIdentity gives each request its own copy of id: what a handler does
// to its caller's roles or claims does not reach the next request.
func copyIdentity(id heddle.Identity) heddle.Identity {
	id.Roles = slices.Clone(id.Roles)
	id.Claims = maps.Clone(id.Claims)
	return id
}
