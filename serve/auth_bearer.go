package serve

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"

	"github.com/heddlehq/heddle/diag"
)

// realm is the WWW-Authenticate challenge of every kind that takes a
// bearer credential.
const realm = `Bearer realm="heddle"`

// errInvalidToken marks an UNAUTHENTICATED error of a credential that was
// sent and refused, which RFC 6750 answers with error="invalid_token"; a
// request without any credential gets the bare challenge.
var errInvalidToken = errors.New("invalid token")

// invalidToken is the UNAUTHENTICATED error of a bearer credential that
// was refused. The message says which check failed; it never holds the
// credential.
func invalidToken(format string, args ...any) error {
	return diag.Wrap(diag.Unauthenticated, errInvalidToken, format, args...)
}

// challenge is the WWW-Authenticate header of err, a 401 of a.
func challenge(a Authenticator, err error) string {
	if errors.Is(err, errInvalidToken) {
		return a.Challenge() + `, error="invalid_token"`
	}
	return a.Challenge()
}

// bearer returns the credential of the request's Authorization: Bearer
// header; an error coded UNAUTHENTICATED when there is none or it is
// malformed. want names what the credential should be, for the message.
func bearer(r *http.Request, want string) (string, error) {
	hs := r.Header.Values("Authorization")
	switch {
	case len(hs) == 0:
		return "", diag.New(diag.Unauthenticated, "no credential: send Authorization: Bearer TOKEN, with %s", want)
	case len(hs) > 1:
		return "", invalidToken("the request has %d Authorization headers: send one", len(hs))
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(hs[0]), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		// Another scheme is no bearer credential at all (RFC 6750 section
		// 3.1): the bare challenge says which one is wanted. The scheme is
		// the client's text and is not repeated.
		return "", diag.New(diag.Unauthenticated, "the Authorization header is not a Bearer credential: send Authorization: Bearer TOKEN, with %s", want)
	}
	if token = strings.TrimSpace(token); token == "" {
		return "", invalidToken("the Authorization: Bearer header holds no token")
	}
	return token, nil
}

// digest returns the SHA-256 digest of a bearer credential, as
// sha256.Sum256([]byte(token)) would, without that copy: a JWT is several
// hundred bytes, and a request's token would be copied to the heap on
// every call only to be hashed.
func digest(token string) [sha256.Size]byte {
	h := sha256.New()
	var buf [256]byte
	for len(token) > 0 {
		n := copy(buf[:], token)
		h.Write(buf[:n])
		token = token[n:]
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
