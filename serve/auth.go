package serve

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
)

// An Authenticator says who sent a request, from what the request carries.
// It is safe for concurrent use.
type Authenticator interface {
	// Authenticate returns the request's caller, or an error coded
	// UNAUTHENTICATED (answered 401 with Challenge) or FORBIDDEN (403).
	// The error's message never holds the credential.
	Authenticate(r *http.Request) (heddle.Identity, error)
	// Challenge is the WWW-Authenticate header of a 401.
	Challenge() string
}

// tokenLender is an Authenticator whose callers' tokens a server called
// as the caller may exchange (serve.auth kind jwt): it puts the token it
// verified on the request's context, beside the identity.
type tokenLender interface {
	withToken(ctx context.Context, r *http.Request) context.Context
}

// newAuthenticator sets up serve.auth's kind; nil is no serve.auth.
func newAuthenticator(ctx context.Context, a *plan.ServeAuth, opts *Options, log *slog.Logger) (Authenticator, error) {
	if a == nil {
		if opts.Addr != nil && !loopback(opts.Addr) {
			return nil, diag.New(diag.ServeAuthInvalid, "serve.auth is not set, and serve listens on %s, which is not a loopback address: set serve.auth (jwt, tokens or trusted_headers) before exposing the worker", opts.Addr)
		}
		return unset{}, nil
	}
	switch a.Kind {
	case config.ServeAuthNone:
		log.Warn("serve.auth kind none: every caller of /v1/ and /mcp/ is anonymous; use it only for development")
		return none{}, nil
	case config.ServeAuthTrustedHeaders:
		return newTrustedHeaders(a)
	case config.ServeAuthTokens:
		return newTokens(ctx, a, opts.Secrets, log)
	case config.ServeAuthJWT:
		return newJWT(ctx, a, opts, log)
	}
	return nil, diag.New(diag.ServeAuthInvalid, "serve.auth kind %s is not available in this build", a.Kind)
}

// authOptions is opts with the defaults newAuthenticator relies on: the
// secrets resolver of rt's plan, built as the runtime builds its own.
func authOptions(rt *runtime.Runtime, opts *Options) *Options {
	o := *opts
	if o.Secrets == nil {
		o.Secrets = secrets.New(secrets.Options{Dir: rt.Plan().Secrets.Dir})
	}
	return &o
}

// metricsHandler is h, behind serve.auth when serve.auth.metrics says
// /metrics needs a caller too.
func (s *Server) metricsHandler(h http.Handler) http.Handler {
	if s.cfg.Auth == nil || !s.cfg.Auth.Metrics {
		return h
	}
	return s.authenticated(h.ServeHTTP)
}

// loopback reports whether addr is a loopback address.
func loopback(addr net.Addr) bool {
	ap, err := netip.ParseAddrPort(addr.String())
	return err == nil && ap.Addr().IsLoopback()
}

// unset is no serve.auth: every /v1/ request is refused, until the
// operator chooses a kind.
type unset struct{}

func (unset) Authenticate(*http.Request) (heddle.Identity, error) {
	return heddle.Identity{}, diag.New(diag.Unauthenticated, "serve.auth is not set: this worker accepts no caller yet; set serve.auth (kind none allows every caller on loopback, for development)")
}

func (unset) Challenge() string { return realm }

// none accepts every caller, as nobody.
type none struct{}

func (none) Authenticate(*http.Request) (heddle.Identity, error) { return heddle.Identity{}, nil }
func (none) Challenge() string                                   { return realm }

// trustedHeaders believes the X-Heddle-* headers of requests from its
// proxies, and refuses them from anywhere else.
type trustedHeaders struct{ proxies []netip.Prefix }

func newTrustedHeaders(a *plan.ServeAuth) (*trustedHeaders, error) {
	t := &trustedHeaders{}
	for _, p := range a.Proxies {
		pfx, err := parsePrefix(p)
		if err != nil {
			return nil, diag.New(diag.ServeAuthInvalid, "serve.auth.proxies: %q is not a CIDR or an address", p)
		}
		t.proxies = append(t.proxies, pfx)
	}
	return t, nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func (t *trustedHeaders) Authenticate(r *http.Request) (heddle.Identity, error) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !t.trusted(ap.Addr().Unmap()) {
		if hasIdentityHeaders(r.Header) {
			return heddle.Identity{}, diag.New(diag.Forbidden, "identity headers are believed only from the proxies of serve.auth.proxies, and this request came from elsewhere")
		}
		return heddle.Identity{}, diag.New(diag.Unauthenticated, "callers are authenticated by the proxies of serve.auth.proxies, and this request came from elsewhere: call the worker through its proxy")
	}
	// A proxy that adds its identity headers to a client's, instead of
	// replacing them, would let the client's come first: refuse both.
	for _, name := range []string{"X-Heddle-Subject", "X-Heddle-Roles"} {
		if len(r.Header.Values(name)) > 1 {
			return heddle.Identity{}, diag.New(diag.Forbidden, "%s is sent more than once: the proxy must replace a client's X-Heddle-* headers, not add to them", name)
		}
	}
	for k, vs := range r.Header {
		if strings.HasPrefix(k, claimPrefix) && len(vs) > 1 {
			return heddle.Identity{}, diag.New(diag.Forbidden, "%s is sent more than once: the proxy must replace a client's X-Heddle-* headers, not add to them", k)
		}
	}
	// The proxy authenticated the caller; what it sends is who the caller
	// is (no header: anonymous).
	return callerFromHeaders(r.Header), nil
}

// hasIdentityHeaders reports whether h holds an X-Heddle-* identity header.
func hasIdentityHeaders(h http.Header) bool {
	for k := range h {
		if k == "X-Heddle-Subject" || k == "X-Heddle-Roles" || strings.HasPrefix(k, claimPrefix) {
			return true
		}
	}
	return false
}

func (t *trustedHeaders) trusted(a netip.Addr) bool {
	for _, p := range t.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (t *trustedHeaders) Challenge() string { return realm }

// claimPrefix begins the header of one identity claim, X-Heddle-Claim-NAME.
const claimPrefix = "X-Heddle-Claim-"

// callerFromHeaders reads X-Heddle-Subject, X-Heddle-Roles
// (comma-separated) and X-Heddle-Claim-NAME.
func callerFromHeaders(h http.Header) heddle.Identity {
	c := heddle.Identity{Subject: h.Get("X-Heddle-Subject")}
	for _, r := range strings.Split(h.Get("X-Heddle-Roles"), ",") {
		if r = strings.TrimSpace(r); r != "" {
			c.Roles = append(c.Roles, r)
		}
	}
	for k, vs := range h {
		if name, ok := strings.CutPrefix(k, claimPrefix); ok && name != "" && len(vs) > 0 {
			if c.Claims == nil {
				c.Claims = map[string]string{}
			}
			c.Claims[strings.ToLower(name)] = vs[0]
		}
	}
	return c
}
