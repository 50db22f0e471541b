package oauth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/heddlehq/heddle/secrets"
)

// builder makes go-sdk's handlers from a Config.
type builder struct {
	cfg     Config
	client  *http.Client
	fetcher sdkauth.AuthorizationCodeFetcher
	secrets *scrubber
}

// clientName is what heddle calls itself at dynamic client registration.
const clientName = "heddle"

func (b *builder) credentials(id string, secret secrets.Value) *oauthex.ClientCredentials {
	c := &oauthex.ClientCredentials{ClientID: id}
	if !secret.IsZero() {
		c.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret.Reveal()}
	}
	return c
}

// authorizationCode is go-sdk's authorization code handler. Registration:
// a client ID metadata document URL (falling back to dynamic registration
// where the server does not take one), a pre-registered client, or dynamic
// registration.
func (b *builder) authorizationCode(initial oauth2.TokenSource) (sdkauth.OAuthHandler, error) {
	c := b.cfg
	hc := &sdkauth.AuthorizationCodeHandlerConfig{
		RedirectURL:              c.RedirectURL,
		AuthorizationCodeFetcher: b.fetcher,
		Client:                   b.client,
		RequestRefreshToken:      true,
		InitialTokenSource:       initial,
	}
	if len(c.Scopes) > 0 {
		configured := c.Scopes
		hc.ScopeFilter = func(discovered []string) []string {
			out := slices.Clone(discovered)
			for _, s := range configured {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
			return out
		}
	}
	dcr := &sdkauth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
		RedirectURIs:            []string{c.RedirectURL},
		ClientName:              clientName,
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: c.TokenEndpointAuth,
	}}
	switch {
	case isMetadataURL(c.ClientID):
		hc.ClientIDMetadataDocumentConfig = &sdkauth.ClientIDMetadataDocumentConfig{URL: c.ClientID}
		hc.DynamicClientRegistrationConfig = dcr
	case c.ClientID != "":
		hc.PreregisteredClient = b.credentials(c.ClientID, c.ClientSecret)
	default:
		hc.DynamicClientRegistrationConfig = dcr
	}
	return sdkauth.NewAuthorizationCodeHandler(hc)
}

// clientCredentials is go-sdk's client credentials handler (SEP-1046).
func (b *builder) clientCredentials() (sdkauth.OAuthHandler, error) {
	return extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: b.credentials(b.cfg.ClientID, b.cfg.ClientSecret),
		HTTPClient:  b.client,
	})
}

// refresh builds the authorization code handler around a pre-provisioned
// refresh token (go-sdk's InitialTokenSource), once the server has named
// its authorization server: the token is redeemed at that server's token
// endpoint, and the handler's full flow remains for a rejected token or a
// scope step-up (when a fetcher is configured).
func (b *builder) refresh(ctx context.Context, req *http.Request, resp *http.Response) (sdkauth.OAuthHandler, bool, error) {
	prm, err := discoverResource(ctx, b.client, req, resp)
	if err != nil {
		return nil, false, err
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := sdkauth.GetAuthServerMetadata(ctx, issuer, b.client)
	if err != nil {
		return nil, false, fmt.Errorf("authorization server metadata: %w", err)
	}
	tokenURL := strings.TrimRight(issuer, "/") + "/token" // the 2025-03-26 fallback
	var methods []string
	if asm != nil {
		tokenURL, methods = asm.TokenEndpoint, asm.TokenEndpointAuthMethodsSupported
	}
	oc := &oauth2.Config{
		ClientID:     b.cfg.ClientID,
		ClientSecret: b.cfg.ClientSecret.Reveal(),
		Endpoint:     oauth2.Endpoint{TokenURL: tokenURL, AuthStyle: authStyle(b.cfg.TokenEndpointAuth, methods)},
		Scopes:       b.cfg.Scopes,
	}
	// Renewals outlive this request: a background context carrying the client.
	rctx := context.WithValue(context.Background(), oauth2.HTTPClient, b.client)
	initial := oc.TokenSource(rctx, &oauth2.Token{RefreshToken: b.cfg.RefreshToken.Reveal()})
	h, err := b.authorizationCode(initial)
	return h, true, err
}

// authStyle picks how the client authenticates at the token endpoint: the
// configured method, else go-sdk's preference among the advertised ones.
func authStyle(configured string, supported []string) oauth2.AuthStyle {
	switch {
	case configured == "client_secret_basic":
		return oauth2.AuthStyleInHeader
	case configured != "":
		return oauth2.AuthStyleInParams
	case slices.Contains(supported, "client_secret_post"):
		return oauth2.AuthStyleInParams
	case slices.Contains(supported, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleAutoDetect
}

// enterprise builds go-sdk's enterprise handler (SEP-990: ID token →
// token exchange at the identity provider → JWT bearer grant at the
// server's authorization server) once the server has named that
// authorization server and its resource identifier.
func (b *builder) enterprise(ctx context.Context, req *http.Request, resp *http.Response) (sdkauth.OAuthHandler, bool, error) {
	prm, err := discoverResource(ctx, b.client, req, resp)
	if err != nil {
		return nil, false, err
	}
	c := b.cfg
	h, err := extauth.NewEnterpriseHandler(&extauth.EnterpriseHandlerConfig{
		IdPIssuerURL:     c.IdPIssuer,
		IdPCredentials:   b.credentials(c.IdPClientID, c.IdPClientSecret),
		MCPAuthServerURL: prm.AuthorizationServers[0],
		MCPResourceURI:   prm.Resource,
		MCPCredentials:   b.credentials(c.ClientID, c.ClientSecret),
		MCPScopes:        c.Scopes,
		IDTokenFetcher: func(ctx context.Context) (*oauth2.Token, error) {
			idt, err := c.IDToken(ctx)
			if err != nil {
				return nil, err
			}
			b.secrets.add(idt.Reveal())
			return (&oauth2.Token{}).WithExtra(map[string]any{"id_token": idt.Reveal()}), nil
		},
		HTTPClient: b.client,
	})
	return h, false, err
}

// discoverResource finds the protected resource metadata (RFC 9728) of the
// server that refused req, as go-sdk's handlers do: at the URL the
// WWW-Authenticate challenge names, then at the path-based and the root
// well-known locations; with none, the server's origin is taken as its
// authorization server (the 2025-03-26 fallback).
func discoverResource(ctx context.Context, client *http.Client, req *http.Request, resp *http.Response) (*oauthex.ProtectedResourceMetadata, error) {
	resource := req.URL.String()
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	type candidate struct{ url, resource string }
	var cands []candidate
	for _, c := range challenges {
		if u := c.Params["resource_metadata"]; u != "" {
			cands = append(cands, candidate{u, resource})
			break
		}
	}
	ru, err := url.Parse(resource)
	if err != nil {
		return nil, fmt.Errorf("the server URL does not parse")
	}
	mu := *ru
	mu.RawQuery, mu.Fragment = "", ""
	mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	cands = append(cands, candidate{mu.String(), resource})
	mu.Path = "/.well-known/oauth-protected-resource"
	origin := *ru
	origin.Path, origin.RawPath, origin.RawQuery, origin.Fragment = "", "", "", ""
	cands = append(cands, candidate{mu.String(), origin.String()})
	for _, c := range cands {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, client)
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("the protected resource metadata names no authorization server")
		}
		return prm, nil
	}
	return &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{origin.String()}, Resource: resource}, nil
}
