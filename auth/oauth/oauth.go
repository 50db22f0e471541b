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
// One strategy value serves MCP and A2A clients alike: the runtime hands
// [Strategy.OAuthHandler] to go-sdk's Streamable HTTP transport, and
// [Strategy.Wrap] applies the same token to any other HTTP client.
//
//	s, err := oauth.New(oauth.Config{
//		Name: "server catalog", Flow: oauth.FlowClientCredentials,
//		ClientID: "heddle-prod", ClientSecret: secret,
//	}, oauth.Options{})
//	t := &mcp.StreamableClientTransport{Endpoint: u, OAuthHandler: s.OAuthHandler(),
//		HTTPClient: &http.Client{Transport: s.Wrap(http.DefaultTransport)}}
package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/diag"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
)

// Kind is the strategy's name in an auth block.
const Kind = "oauth"

// The flows, as the flow setting names them.
const (
	FlowAuthorizationCode = "authorization_code"
	FlowClientCredentials = "client_credentials"
	FlowEnterprise        = "enterprise"
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
		return New(cfg, opts)
	}
}

// Config is the strategy's settings with their references resolved.
type Config struct {
	// Name is what messages call the client: "server catalog".
	Name string
	// Flow is FlowAuthorizationCode (default), FlowClientCredentials or
	// FlowEnterprise.
	Flow string
	// ClientID is a pre-registered client id, or an https URL of a client
	// ID metadata document (SEP-991); empty means dynamic registration.
	ClientID     string
	ClientSecret string
	// TokenEndpointAuth is client_secret_basic, client_secret_post or none:
	// asked for at dynamic registration, and enforced on token requests
	// (go-sdk otherwise picks from the server's metadata).
	TokenEndpointAuth string
	// Scopes are added to those the server asks for (authorization_code),
	// or requested (enterprise).
	Scopes []string
	// RedirectURL is the authorization code flow's redirect URI; with the
	// default fetcher, a loopback http URL with a port that heddle listens on.
	RedirectURL string
	// RefreshToken is a pre-provisioned refresh token (authorization_code).
	RefreshToken string
	// Enterprise flow (SEP-990): the identity provider's issuer, optional
	// token endpoint (when set, its metadata is not fetched), heddle's client
	// there, and the ID token, read afresh for every authorization.
	IdPIssuer        string
	IdPTokenEndpoint string
	IdPClientID      string
	IdPClientSecret  string
	IDToken          func(ctx context.Context) (string, error)
}

// Strategy is a built oauth strategy. It is safe for concurrent use; Close
// cancels an authorization in progress and stops its listener.
type Strategy struct {
	h         *handler
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
	s := &Strategy{}
	base := http.RoundTripper(nil)
	client := opts.HTTPClient
	if client == nil {
		s.own = http.DefaultTransport.(*http.Transport).Clone()
		base = s.own
		client = &http.Client{Timeout: 30 * time.Second}
	} else {
		base = client.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		c := *client
		client = &c
	}
	client.Transport = adapt(base, &cfg)

	closing, stop := context.WithCancel(context.Background())
	s.stop = stop
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
	sc := newScrubber(cfg.ClientSecret, cfg.RefreshToken, cfg.IdPClientSecret)
	if fetcher != nil { // an authorization code is a secret too, until redeemed
		fetch := fetcher
		fetcher = func(ctx context.Context, args *sdkauth.AuthorizationArgs) (*sdkauth.AuthorizationResult, error) {
			res, err := fetch(ctx, args)
			if res != nil {
				sc.add(res.Code)
			}
			return res, err
		}
	}
	h := &handler{name: cfg.Name, flow: cfg.Flow, log: log, closing: closing, timeout: timeout, secrets: sc}
	b := &builder{cfg: cfg, client: client, fetcher: fetcher, secrets: sc}
	var err error
	switch {
	case cfg.Flow == FlowEnterprise:
		h.lazy = b.enterprise
	case cfg.Flow == FlowClientCredentials:
		h.inner, err = b.clientCredentials()
	case cfg.RefreshToken != "":
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

// invalid is MCP_AUTH_STRATEGY_INVALID with err's text in the message: the
// reason names settings, never values, and an operator needs it.
func invalid(name string, err error) error {
	return diag.Wrap(diag.MCPAuthStrategyInvalid, err, "%s: auth strategy oauth: %s", name, strings.ReplaceAll(err.Error(), "\n", "; "))
}

// validate checks the settings of cfg's flow.
func validate(cfg *Config, opts Options) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	notFor := func(setting string, set bool) {
		if set {
			bad("setting %s does not apply to flow %s", setting, cfg.Flow)
		}
	}
	if cfg.ClientSecret != "" && cfg.ClientID == "" {
		bad("client_secret_ref needs client_id or client_id_ref")
	}
	if m := cfg.TokenEndpointAuth; m != "" && !slices.Contains([]string{"client_secret_basic", "client_secret_post", "none"}, m) {
		bad("token_endpoint_auth must be client_secret_basic, client_secret_post or none")
	}
	if cfg.TokenEndpointAuth == "none" && cfg.ClientSecret != "" {
		bad("token_endpoint_auth none sends no client secret: drop client_secret_ref")
	}
	idp := cfg.IdPIssuer != "" || cfg.IdPTokenEndpoint != "" || cfg.IdPClientID != "" || cfg.IdPClientSecret != "" || cfg.IDToken != nil
	switch cfg.Flow {
	case FlowAuthorizationCode:
		notFor("idp_*", idp)
		if cfg.RedirectURL != "" && opts.Fetcher == nil {
			if err := checkLoopbackRedirect(cfg.RedirectURL); err != nil {
				bad("redirect_url: %v", err)
			}
		}
		switch {
		case cfg.RedirectURL == "" && opts.Fetcher != nil:
			bad("flow authorization_code needs redirect_url")
		case cfg.RedirectURL == "" && cfg.RefreshToken == "":
			bad("flow authorization_code needs a way to get an authorization code: redirect_url (a loopback listener) or refresh_token_ref")
		}
		if cfg.RefreshToken != "" && (cfg.ClientID == "" || isMetadataURL(cfg.ClientID)) {
			bad("refresh_token_ref needs the pre-registered client it was issued to: client_id or client_id_ref")
		}
	case FlowClientCredentials:
		if cfg.ClientID == "" || cfg.ClientSecret == "" {
			bad("flow client_credentials needs client_id (or client_id_ref) and client_secret_ref")
		}
		if cfg.TokenEndpointAuth == "none" {
			bad("flow client_credentials authenticates the client: token_endpoint_auth cannot be none")
		}
		notFor("scopes", len(cfg.Scopes) > 0) // go-sdk requests the scopes the server names
		notFor("redirect_url", cfg.RedirectURL != "")
		notFor("refresh_token_ref", cfg.RefreshToken != "")
		notFor("idp_*", idp)
	case FlowEnterprise:
		if cfg.ClientID == "" {
			bad("flow enterprise needs client_id (or client_id_ref): heddle's client at the server's authorization server")
		}
		if cfg.IdPIssuer == "" || cfg.IdPClientID == "" || cfg.IDToken == nil {
			bad("flow enterprise needs idp_issuer, idp_client_id and idp_token_ref")
		}
		for _, u := range []struct{ name, v string }{{"idp_issuer", cfg.IdPIssuer}, {"idp_token_endpoint", cfg.IdPTokenEndpoint}} {
			if u.v != "" {
				if err := checkHTTPSOrLoopback(u.v); err != nil {
					bad("%s: %v", u.name, err)
				}
			}
		}
		notFor("redirect_url", cfg.RedirectURL != "")
		notFor("refresh_token_ref", cfg.RefreshToken != "")
	default:
		bad("unknown flow %q", cfg.Flow)
	}
	return errors.Join(errs...)
}

// checkLoopbackRedirect accepts http://127.0.0.1:PORT/path (or [::1],
// localhost): heddle listens there for the authorization response.
func checkLoopbackRedirect(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	if u.Scheme != "http" || !isLoopbackHost(u.Hostname()) {
		return errors.New("must be a loopback http URL such as http://127.0.0.1:8765/callback: heddle listens there")
	}
	if p := u.Port(); p == "" || p == "0" {
		return errors.New("needs an explicit port: the authorization server must know the redirect URI")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return errors.New("must have no query, fragment or userinfo")
	}
	return nil
}

func checkHTTPSOrLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("not an absolute URL")
	}
	if u.Scheme == "https" || (u.Scheme == "http" && isLoopbackHost(u.Hostname())) {
		return nil
	}
	return errors.New("must be https (plain http only on loopback)")
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isMetadataURL reports whether a client id is the URL of a client ID
// metadata document: https with a path (go-sdk's own test).
func isMetadataURL(id string) bool {
	u, err := url.Parse(id)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.Path != "" && u.Path != "/"
}

// OAuthHandler returns the handler a Streamable HTTP transport gives go-sdk.
// From then on Wrap leaves the requests that go-sdk authenticates alone.
func (s *Strategy) OAuthHandler() sdkauth.OAuthHandler {
	s.delegated.Store(true)
	return s.h
}

// Wrap returns a RoundTripper that sends the strategy's bearer token and,
// on a 401 or 403, authorizes once and retries once (when the body can be
// replayed). A request that already carries an Authorization header passes
// untouched; so does one without a token while go-sdk drives the strategy
// (it authorizes on the response itself).
func (s *Strategy) Wrap(next http.RoundTripper) http.RoundTripper {
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

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var (
	_ authlive.OAuthStrategy = (*Strategy)(nil)
	_ sdkauth.OAuthHandler   = (*handler)(nil)
)
