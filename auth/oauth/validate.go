package oauth

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
)

// validate checks the settings of cfg's flow. The errors name settings,
// never values, and come in the order below: the client's, then the flow's.
func validate(cfg *Config, opts Options) error {
	p := &problems{flow: cfg.Flow}
	p.checkClient(cfg)
	switch cfg.Flow {
	case FlowAuthorizationCode:
		p.checkAuthorizationCode(cfg, opts)
	case FlowClientCredentials:
		p.checkClientCredentials(cfg)
	case FlowEnterprise:
		p.checkEnterprise(cfg)
	case FlowTokenExchange:
		p.checkTokenExchange(cfg)
	default:
		p.bad("unknown flow %q", cfg.Flow)
	}
	return errors.Join(p.errs...)
}

// problems gathers what is wrong with the settings of one flow.
type problems struct {
	flow string
	errs []error
}

// bad records one problem.
func (p *problems) bad(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf(format, args...))
}

// notFor records a setting that is set but has no meaning in the flow.
func (p *problems) notFor(setting string, set bool) {
	if set {
		p.bad("setting %s does not apply to flow %s", setting, p.flow)
	}
}

// checkClient checks how the client authenticates, which every flow shares.
func (p *problems) checkClient(cfg *Config) {
	if !cfg.ClientSecret.IsZero() && cfg.ClientID == "" {
		p.bad("client_secret_ref needs client_id or client_id_ref")
	}
	if m := cfg.TokenEndpointAuth; m != "" && !slices.Contains([]string{"client_secret_basic", "client_secret_post", "none"}, m) {
		p.bad("token_endpoint_auth must be client_secret_basic, client_secret_post or none")
	}
	if cfg.TokenEndpointAuth == "none" && !cfg.ClientSecret.IsZero() {
		p.bad("token_endpoint_auth none sends no client secret: drop client_secret_ref")
	}
}

// checkAuthorizationCode checks that the authorization_code flow has a way
// to get a code — a redirect listener, a fetcher or a refresh token — and
// that a refresh token comes with the client it was issued to.
func (p *problems) checkAuthorizationCode(cfg *Config, opts Options) {
	p.notFor("idp_*", cfg.idpSet())
	p.notForExchange(cfg)
	if cfg.RedirectURL != "" && opts.Fetcher == nil {
		if err := checkLoopbackRedirect(cfg.RedirectURL); err != nil {
			p.bad("redirect_url: %v", err)
		}
	}
	switch {
	case cfg.RedirectURL == "" && opts.Fetcher != nil:
		p.bad("flow authorization_code needs redirect_url")
	case cfg.RedirectURL == "" && cfg.RefreshToken.IsZero():
		p.bad("flow authorization_code needs a way to get an authorization code: redirect_url (a loopback listener) or refresh_token_ref")
	}
	if !cfg.RefreshToken.IsZero() && (cfg.ClientID == "" || isMetadataURL(cfg.ClientID)) {
		p.bad("refresh_token_ref needs the pre-registered client it was issued to: client_id or client_id_ref")
	}
}

// checkClientCredentials checks that the client_credentials flow has a
// client that authenticates, and nothing of the other flows.
func (p *problems) checkClientCredentials(cfg *Config) {
	if cfg.ClientID == "" || cfg.ClientSecret.IsZero() {
		p.bad("flow client_credentials needs client_id (or client_id_ref) and client_secret_ref")
	}
	if cfg.TokenEndpointAuth == "none" {
		p.bad("flow client_credentials authenticates the client: token_endpoint_auth cannot be none")
	}
	p.notFor("scopes", len(cfg.Scopes) > 0) // go-sdk requests the scopes the server names
	p.notFor("redirect_url", cfg.RedirectURL != "")
	p.notFor("refresh_token_ref", !cfg.RefreshToken.IsZero())
	p.notFor("idp_*", cfg.idpSet())
	p.notForExchange(cfg)
}

// notForExchange records the token_exchange flow's own settings in
// another flow.
func (p *problems) notForExchange(cfg *Config) {
	p.notFor("resource", cfg.Resource != "")
	p.notFor("audience", cfg.Audience != "")
}

// checkTokenExchange checks that the token_exchange flow has heddle's
// client at the identity provider, which authenticates (it is the actor
// of every exchange, and asks for heddle's own token), where to exchange,
// and what for.
func (p *problems) checkTokenExchange(cfg *Config) {
	if cfg.ClientID == "" || cfg.ClientSecret.IsZero() {
		p.bad("flow token_exchange needs client_id (or client_id_ref) and client_secret_ref: heddle's client at the identity provider")
	}
	if cfg.TokenEndpointAuth == "none" {
		p.bad("flow token_exchange authenticates the client: token_endpoint_auth cannot be none")
	}
	if cfg.IdPIssuer == "" && cfg.IdPTokenEndpoint == "" {
		p.bad("flow token_exchange needs idp_issuer or idp_token_endpoint: where callers' tokens are exchanged")
	}
	for _, u := range []struct{ name, v string }{{"idp_issuer", cfg.IdPIssuer}, {"idp_token_endpoint", cfg.IdPTokenEndpoint}} {
		if u.v != "" {
			if err := checkHTTPSOrLoopback(u.v); err != nil {
				p.bad("%s: %v", u.name, err)
			}
		}
	}
	if cfg.Resource == "" && cfg.Audience == "" {
		p.bad("flow token_exchange needs resource or audience: what the exchanged tokens are for")
	}
	if r := cfg.Resource; r != "" {
		if u, err := url.Parse(r); err != nil || u.Scheme == "" || u.Fragment != "" {
			p.bad("resource must be an absolute URI without a fragment (RFC 8707)")
		}
	}
	p.notFor("redirect_url", cfg.RedirectURL != "")
	p.notFor("refresh_token_ref", !cfg.RefreshToken.IsZero())
	p.notFor("idp_client_id", cfg.IdPClientID != "")
	p.notFor("idp_client_secret_ref", !cfg.IdPClientSecret.IsZero())
	p.notFor("idp_token_ref", cfg.IDToken != nil)
}

// checkEnterprise checks that the enterprise flow has its two clients, the
// identity provider's URLs and an ID token.
func (p *problems) checkEnterprise(cfg *Config) {
	if cfg.ClientID == "" {
		p.bad("flow enterprise needs client_id (or client_id_ref): heddle's client at the server's authorization server")
	}
	if cfg.IdPIssuer == "" || cfg.IdPClientID == "" || cfg.IDToken == nil {
		p.bad("flow enterprise needs idp_issuer, idp_client_id and idp_token_ref")
	}
	for _, u := range []struct{ name, v string }{{"idp_issuer", cfg.IdPIssuer}, {"idp_token_endpoint", cfg.IdPTokenEndpoint}} {
		if u.v != "" {
			if err := checkHTTPSOrLoopback(u.v); err != nil {
				p.bad("%s: %v", u.name, err)
			}
		}
	}
	p.notFor("redirect_url", cfg.RedirectURL != "")
	p.notFor("refresh_token_ref", !cfg.RefreshToken.IsZero())
	p.notForExchange(cfg)
}

// idpSet reports whether any setting of the enterprise flow's identity
// provider is set.
func (cfg *Config) idpSet() bool {
	return cfg.IdPIssuer != "" || cfg.IdPTokenEndpoint != "" || cfg.IdPClientID != "" || !cfg.IdPClientSecret.IsZero() || cfg.IDToken != nil
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
