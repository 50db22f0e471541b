// Package oauth is the live half of heddle's oauth strategy (auth: {kind:
// oauth}). It implements no part of OAuth itself: it configures go-sdk's own
// client handlers — [sdkauth.NewAuthorizationCodeHandler] (PKCE, RFC 9728 and
// RFC 8414 discovery, client ID metadata documents, pre-registration or
// dynamic client registration, scope step-up, refresh tokens),
// [extauth.NewClientCredentialsHandler] and [extauth.EnterpriseHandler]
// (SEP-990) — and adds what a shared, long-lived client needs around them:
//
//   - Authorize is serialised, and concurrent callers share one run: the SDK's
//     handlers write their token source without a lock, and one renewal
//     should serve every caller of a server.
//   - A 401 or 403 leads to one authorization and one retry, never a loop: a
//     caller whose request carried an older token than the current one just
//     retries with the current one.
//   - Tokens are cached and renewed ahead of expiry by golang.org/x/oauth2
//     (10 s before they expire), once for all callers.
//   - Errors name settings and servers, never a secret: client secrets,
//     refresh, ID and access tokens are scrubbed from every error the
//     strategy returns, and nothing it logs carries one.
//   - A headless deployment gets its authorization code from a loopback
//     redirect listener (redirect_url; the URL to visit is logged at INFO)
//     or needs none, given a pre-provisioned refresh token
//     (refresh_token_ref).
//
// The token_exchange flow is heddle's own, not a go-sdk handler: it calls an
// MCP server as the caller of each call (RFC 8693 at the identity provider,
// the caller's token as subject, heddle's client as actor), picking each
// request's token in Wrap (see exchanger), and is an
// authlive.CallerStrategy.
//
// One strategy value serves MCP and A2A clients alike: the runtime hands
// [Strategy.OAuthHandler] to go-sdk's Streamable HTTP transport, and
// [Strategy.Wrap] applies the same token to any other HTTP client.
//
//	s, err := oauth.New(oauth.Config{
//		Name: "server catalog", Flow: oauth.FlowClientCredentials,
//		ClientID: "heddle-prod", ClientSecret: secret, // a secrets.Value
//	}, oauth.Options{})
//	t := &mcp.StreamableClientTransport{Endpoint: u, OAuthHandler: s.OAuthHandler(),
//		HTTPClient: &http.Client{Transport: s.Wrap(http.DefaultTransport)}}
package oauth

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/secrets"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
)

// Kind is the strategy's name in an auth block.
const Kind = "oauth"

// The flows, as the flow setting names them.
const (
	FlowAuthorizationCode = "authorization_code"
	FlowClientCredentials = "client_credentials"
	FlowEnterprise        = "enterprise"
	FlowTokenExchange     = "token_exchange"
)

// Options customise the strategy beyond its settings; they are for Go code
// that builds strategies (tests, the conformance client, an application
// registering a variant under its own kind). The zero value is the default.
type Options struct {
	// Fetcher obtains an authorization code for the authorization_code
	// flow. Default: the loopback listener at redirect_url. [RedirectFetcher]
	// suits authorization servers that approve without a person.
	Fetcher sdkauth.AuthorizationCodeFetcher
	// HTTPClient sends discovery, registration and token requests. Default:
	// a client of the strategy's own with a 30 s timeout.
	HTTPClient *http.Client
	// Logger receives the strategy's log. Default: slog.Default().
	Logger *slog.Logger
	// AuthorizationTimeout bounds one authorization, which may outlive the
	// request that started it (an operator visiting a URL). Default: 10
	// minutes with the redirect listener, 2 minutes otherwise.
	AuthorizationTimeout time.Duration
}

// Builder returns the live builder of the oauth strategy with opts; the
// default one is registered as "oauth". An application can register a
// variant: authlive.Register("oauth-auto", oauth.Builder(oauth.Options{Fetcher:
// oauth.RedirectFetcher(nil)})).
func Builder(opts Options) authlive.Builder {
	return func(ctx context.Context, env authlive.Env, settings map[string]any) (authlive.Strategy, error) {
		cfg, err := configFrom(ctx, env, settings)
		if err != nil {
			return nil, err
		}
		s, err := New(cfg, opts)
		switch {
		case err != nil:
			return nil, err
		case cfg.Flow == FlowTokenExchange:
			return exchangeStrategy{s}, nil
		}
		return s, nil
	}
}

// Config is the strategy's settings with their references resolved.
type Config struct {
	// Name is what messages call the client: "server catalog".
	Name string
	// Flow is FlowAuthorizationCode (default), FlowClientCredentials,
	// FlowEnterprise or FlowTokenExchange.
	Flow string
	// ClientID is a pre-registered client id, or an https URL of a client
	// ID metadata document (SEP-991); empty means dynamic registration.
	ClientID string
	// ClientSecret is the client's secret, if it has one.
	ClientSecret secrets.Value
	// TokenEndpointAuth is client_secret_basic, client_secret_post or none:
	// asked for at dynamic registration, and enforced on token requests
	// (go-sdk otherwise picks from the server's metadata).
	TokenEndpointAuth string
	// Scopes are added to those the server asks for (authorization_code),
	// or requested (enterprise, token_exchange).
	Scopes []string
	// RedirectURL is the authorization code flow's redirect URI; with the
	// default fetcher, a loopback http URL with a port that heddle listens on.
	RedirectURL string
	// RefreshToken is a pre-provisioned refresh token (authorization_code).
	RefreshToken secrets.Value
	// Enterprise flow (SEP-990): the identity provider's issuer, optional
	// token endpoint (when set, its metadata is not fetched), heddle's client
	// there, and the ID token, read afresh for every authorization. The
	// token_exchange flow exchanges callers' tokens at the same issuer (or
	// token endpoint), as the client of ClientID.
	IdPIssuer        string
	IdPTokenEndpoint string
	IdPClientID      string
	IdPClientSecret  secrets.Value
	IDToken          func(ctx context.Context) (secrets.Value, error)
	// Token exchange flow (RFC 8693): the resource (RFC 8707) and the
	// audience the exchanged tokens are for. Builder makes the server's
	// URL the resource when neither is set.
	Resource string
	Audience string
}

// Strategy is a built oauth strategy. It is safe for concurrent use; Close
// cancels an authorization in progress and stops its listener.
type Strategy struct {
	h         *handler
	x         *exchanger // the token_exchange flow; nil for the others
	delegated atomic.Bool
	own       *http.Transport // closed with the strategy; nil with Options.HTTPClient
	stop      context.CancelFunc
	closeOnce sync.Once
}

// New builds a strategy. Errors name the setting at fault, never a value.
func New(cfg Config, opts Options) (*Strategy, error) {
	if cfg.Flow == "" {
		cfg.Flow = FlowAuthorizationCode
	}
	if cfg.Name == "" {
		cfg.Name = "oauth"
	}
	if err := validate(&cfg, opts); err != nil {
		return nil, invalid(cfg.Name, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	closing, stop := context.WithCancel(context.Background())
	if cfg.Flow == FlowTokenExchange {
		// Its token requests are heddle's own, authenticated as the
		// settings say: go-sdk sends none, so adapt has nothing to do.
		client, own := plainClient(opts)
		sc := newScrubber(cfg.ClientSecret.Reveal())
		return &Strategy{own: own, stop: stop, x: newExchanger(cfg, client, log, sc, closing)}, nil
	}
	client, own := httpClient(opts, &cfg)
	s := &Strategy{own: own, stop: stop}
	fetcher, timeout := codeFetcher(&cfg, opts, log)
	sc := newScrubber(cfg.ClientSecret.Reveal(), cfg.RefreshToken.Reveal(), cfg.IdPClientSecret.Reveal())
	fetcher = scrubbingCodes(fetcher, sc)
	h := &handler{name: cfg.Name, flow: cfg.Flow, log: log, closing: closing, timeout: timeout, secrets: sc}
	b := &builder{cfg: cfg, client: client, fetcher: fetcher, secrets: sc}
	var err error
	switch {
	case cfg.Flow == FlowEnterprise:
		h.lazy = b.enterprise
	case cfg.Flow == FlowClientCredentials:
		h.inner, err = b.clientCredentials()
	case !cfg.RefreshToken.IsZero():
		h.lazy = b.refresh
	default:
		h.inner, err = b.authorizationCode(nil)
	}
	if err != nil {
		stop()
		return nil, invalid(cfg.Name, sc.scrub(err))
	}
	s.h = h
	return s, nil
}

// httpClient returns the client that sends discovery, registration and
// token requests, through adapt, and the transport Close releases: the
// strategy's own, or nil with Options.HTTPClient, which is copied, never
// changed.
func httpClient(opts Options, cfg *Config) (*http.Client, *http.Transport) {
	if opts.HTTPClient == nil {
		own := http.DefaultTransport.(*http.Transport).Clone()
		return &http.Client{Timeout: 30 * time.Second, Transport: adapt(own, cfg)}, own
	}
	c := *opts.HTTPClient
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = adapt(base, cfg)
	return &c, nil
}

// plainClient is httpClient without adapt.
func plainClient(opts Options) (*http.Client, *http.Transport) {
	if opts.HTTPClient == nil {
		own := http.DefaultTransport.(*http.Transport).Clone()
		return &http.Client{Timeout: 30 * time.Second, Transport: own}, own
	}
	c := *opts.HTTPClient
	return &c, nil
}

// codeFetcher returns how the authorization_code flow gets a code, nil for
// the other flows, and how long one authorization may take. Without
// Options.Fetcher the code comes to the listener at redirect_url; without a
// redirect_url (a refresh token alone) no code can come, and cfg gets the
// redirect URL go-sdk needs all the same.
func codeFetcher(cfg *Config, opts Options, log *slog.Logger) (sdkauth.AuthorizationCodeFetcher, time.Duration) {
	fetcher, timeout := opts.Fetcher, opts.AuthorizationTimeout
	if cfg.Flow == FlowAuthorizationCode && fetcher == nil {
		if cfg.RedirectURL != "" {
			fetcher = listenerFetcher(cfg.Name, cfg.RedirectURL, log)
			if timeout == 0 {
				timeout = 10 * time.Minute
			}
		} else {
			fetcher = noFetcher(cfg.Name)
			cfg.RedirectURL = "http://127.0.0.1/callback" // never used: go-sdk needs one
		}
	}
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	return fetcher, timeout
}

// scrubbingCodes returns fetch, or nil without one, adding every code it
// fetches to sc: an authorization code is a secret too, until redeemed.
func scrubbingCodes(fetch sdkauth.AuthorizationCodeFetcher, sc *scrubber) sdkauth.AuthorizationCodeFetcher {
	if fetch == nil {
		return nil
	}
	return func(ctx context.Context, args *sdkauth.AuthorizationArgs) (*sdkauth.AuthorizationResult, error) {
		res, err := fetch(ctx, args)
		if res != nil {
			sc.add(res.Code)
		}
		return res, err
	}
}

// invalid is MCP_AUTH_STRATEGY_INVALID with err's text in the message: the
// reason names settings, never values, and an operator needs it.
func invalid(name string, err error) error {
	return diag.Wrap(diag.MCPAuthStrategyInvalid, err, "%s: auth strategy oauth: %s", name, strings.ReplaceAll(err.Error(), "\n", "; "))
}

// OAuthHandler returns the handler a Streamable HTTP transport gives go-sdk.
// From then on Wrap leaves the requests that go-sdk authenticates alone.
// The token_exchange flow has none (nil): Wrap picks each request's token.
func (s *Strategy) OAuthHandler() sdkauth.OAuthHandler {
	if s.x != nil {
		return nil
	}
	s.delegated.Store(true)
	return s.h
}

// Wrap returns a RoundTripper that sends the strategy's bearer token and,
// on a 401 or 403, authorizes once and retries once (when the body can be
// replayed). A request that already carries an Authorization header passes
// untouched; so does one without a token while go-sdk drives the strategy
// (it authorizes on the response itself).
//
// With the token_exchange flow, a request whose context carries a caller's
// token is sent with the token the identity provider exchanged it for, and
// any other with heddle's own token (client credentials), whatever
// Authorization header it carried.
func (s *Strategy) Wrap(next http.RoundTripper) http.RoundTripper {
	if s.x != nil {
		return s.x.Wrap(next)
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Header.Get("Authorization") != "" {
			return next.RoundTrip(req)
		}
		tok := s.h.token()
		if tok == "" && s.delegated.Load() {
			return next.RoundTrip(req)
		}
		first := withBearer(req, tok, req.Body)
		resp, err := next.RoundTrip(first)
		if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
			return resp, err
		}
		if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
			return resp, nil // cannot replay: the caller sees the refusal
		}
		if err := s.h.Authorize(req.Context(), first, resp); err != nil {
			return nil, err
		}
		body := req.Body
		if req.GetBody != nil {
			if body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		return next.RoundTrip(withBearer(req, s.h.token(), body))
	})
}

func withBearer(req *http.Request, tok string, body io.ReadCloser) *http.Request {
	r := req.Clone(req.Context())
	r.Body = body
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return r
}

// Close cancels an authorization in progress (and its listener) and
// releases idle connections. It is idempotent.
func (s *Strategy) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		if s.own != nil {
			s.own.CloseIdleConnections()
		}
	})
	return nil
}

// exchangeStrategy is what the runtime gets of a strategy of the
// token_exchange flow: a CallerStrategy, and no OAuth handler for go-sdk.
// Only it is a CallerStrategy: the other flows' requests are all heddle's.
type exchangeStrategy struct{ s *Strategy }

func (e exchangeStrategy) Wrap(next http.RoundTripper) http.RoundTripper { return e.s.Wrap(next) }
func (e exchangeStrategy) ForCaller(ctx context.Context) error           { return e.s.x.ForCaller(ctx) }
func (e exchangeStrategy) Close() error                                  { return e.s.Close() }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var (
	_ authlive.OAuthStrategy  = (*Strategy)(nil)
	_ authlive.CallerStrategy = exchangeStrategy{}
	_ sdkauth.OAuthHandler    = (*handler)(nil)
)
