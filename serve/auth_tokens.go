package serve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"maps"
	"net/http"
	"slices"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/secrets"
)

// minTokenLength is the length under which a static token is logged as
// easy to guess.
const minTokenLength = 16

// tokens is serve.auth kind tokens: static bearer tokens, each standing for
// one caller. Only the tokens' SHA-256 digests are kept; a presented token
// is hashed and compared with every digest in constant time, so neither
// the comparison nor which entry matched shows in the time taken.
type tokens struct{ entries []tokenEntry }

type tokenEntry struct {
	name string
	sum  [sha256.Size]byte
	id   heddle.Identity
}

// newTokens resolves every token of a by reference, with res.
func newTokens(ctx context.Context, a *plan.ServeAuth, res secrets.Resolver, log *slog.Logger) (*tokens, error) {
	t := &tokens{}
	seen := map[[sha256.Size]byte]string{}
	for _, name := range slices.Sorted(maps.Keys(a.Tokens)) {
		tok := a.Tokens[name]
		path := config.Join("serve", "auth", "tokens", name, "token_ref")
		v, err := res.Resolve(ctx, tok.TokenRef)
		if err != nil {
			// The resolver's message names the reference, never a value.
			return nil, diag.Wrap(diag.CodeOf(err), err, "%s: %v", path, err)
		}
		sum := sha256.Sum256([]byte(v.Reveal()))
		if other, ok := seen[sum]; ok {
			return nil, diag.New(diag.ServeAuthInvalid, "serve.auth.tokens %s and %s resolve to the same token: each token must stand for one caller", other, name)
		}
		seen[sum] = name
		if n := len(v.Reveal()); n < minTokenLength {
			log.Warn("serve.auth token is short and easy to guess; use at least 16 random characters", "token", name, "length", n)
		}
		t.entries = append(t.entries, tokenEntry{name: name, sum: sum,
			id: heddle.Identity{Subject: tok.Subject, Roles: tok.Roles, Claims: tok.Claims}})
	}
	return t, nil
}

func (t *tokens) Authenticate(r *http.Request) (heddle.Identity, error) {
	raw, err := bearer(r, "one of the tokens of serve.auth.tokens")
	if err != nil {
		return heddle.Identity{}, err
	}
	sum := digest(raw)
	var found *tokenEntry
	for i := range t.entries {
		// Every entry is compared, match or not.
		if subtle.ConstantTimeCompare(sum[:], t.entries[i].sum[:]) == 1 && found == nil {
			found = &t.entries[i]
		}
	}
	if found == nil {
		return heddle.Identity{}, invalidToken("the bearer token is none of serve.auth.tokens")
	}
	// Each request gets its own copy: what a handler does to its caller's
	// roles or claims does not reach the next request.
	id := found.id
	id.Roles = slices.Clone(id.Roles)
	id.Claims = maps.Clone(id.Claims)
	return id, nil
}

func (t *tokens) Challenge() string { return realm }

var _ Authenticator = (*tokens)(nil)
