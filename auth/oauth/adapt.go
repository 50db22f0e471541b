package oauth

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// adapt wraps the transport go-sdk's handlers send their requests through,
// for the two settings go-sdk v1.8.0 has no field for:
//
//   - token_endpoint_auth: go-sdk picks the client authentication method
//     itself (client_secret_post when advertised; always post for the
//     enterprise flow's JWT bearer grant). When the setting is given, token
//     requests are sent with that method instead. RFC 8693 token exchange at
//     an identity provider is left as go-sdk sends it.
//   - idp_token_endpoint: go-sdk's enterprise handler discovers the identity
//     provider's token endpoint from its metadata and requires that metadata
//     to advertise PKCE, which an identity provider used only for token
//     exchange need not. When the endpoint is configured, the metadata
//     lookups are answered here, from the settings, with no request.
func adapt(next http.RoundTripper, cfg *Config) http.RoundTripper {
	if cfg.TokenEndpointAuth == "" && (cfg.Flow != FlowEnterprise || cfg.IdPTokenEndpoint == "") {
		return next
	}
	a := &adapter{next: next, method: cfg.TokenEndpointAuth}
	if cfg.Flow == FlowEnterprise && cfg.IdPTokenEndpoint != "" {
		meta, _ := json.Marshal(map[string]any{
			"issuer":                           cfg.IdPIssuer,
			"token_endpoint":                   cfg.IdPTokenEndpoint,
			"grant_types_supported":            []string{"urn:ietf:params:oauth:grant-type:token-exchange"},
			"code_challenge_methods_supported": []string{"S256"},
		})
		a.idpMeta = meta
		a.idpURLs = metadataURLs(cfg.IdPIssuer)
	}
	return a
}

type adapter struct {
	next    http.RoundTripper
	method  string
	idpMeta []byte
	idpURLs map[string]bool
}

const grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"

// RoundTrip answers the identity provider's metadata lookups itself and
// sends token requests with the configured client authentication; every
// other request passes unchanged.
func (a *adapter) RoundTrip(req *http.Request) (*http.Response, error) {
	if a.isMetadataLookup(req) {
		return a.metadata(req), nil
	}
	if !a.mayBeTokenRequest(req) {
		return a.next.RoundTrip(req)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("grant_type") == "" || form.Get("grant_type") == grantTokenExchange {
		return a.next.RoundTrip(withBody(req, body))
	}
	return a.next.RoundTrip(a.authenticate(req, form))
}

// isMetadataLookup reports whether req asks for the configured identity
// provider's metadata.
func (a *adapter) isMetadataLookup(req *http.Request) bool {
	return a.idpMeta != nil && req.Method == http.MethodGet &&
		a.idpURLs[strings.TrimSuffix(req.URL.Scheme+"://"+req.URL.Host+req.URL.Path, "/")]
}

// metadata is the identity provider's metadata, made from the settings, as
// the answer to req.
func (a *adapter) metadata(req *http.Request) *http.Response {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(a.idpMeta)),
		ContentLength: int64(len(a.idpMeta)),
		Request:       req,
	}
}

// mayBeTokenRequest reports whether req is a form POST whose client
// authentication the setting decides; only its body tells for sure.
func (a *adapter) mayBeTokenRequest(req *http.Request) bool {
	if a.method == "" || req.Method != http.MethodPost || req.Body == nil {
		return false
	}
	ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	return ct == "application/x-www-form-urlencoded"
}

// authenticate returns the token request req, whose body is form, with the
// client's id and secret moved to where token_endpoint_auth puts them,
// wherever go-sdk put them (the form or a Basic Authorization header).
func (a *adapter) authenticate(req *http.Request, form url.Values) *http.Request {
	r := req.Clone(req.Context())
	id, secret := form.Get("client_id"), form.Get("client_secret")
	if u, p, ok := req.BasicAuth(); ok {
		id, _ = url.QueryUnescape(u)
		secret, _ = url.QueryUnescape(p)
		r.Header.Del("Authorization")
	}
	form.Del("client_secret")
	switch a.method {
	case "client_secret_basic":
		if secret != "" {
			form.Del("client_id")
			r.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
		} else if id != "" {
			form.Set("client_id", id)
		}
	case "client_secret_post":
		setIfAny(form, "client_id", id)
		setIfAny(form, "client_secret", secret)
	case "none":
		setIfAny(form, "client_id", id)
	}
	return withBody(r, []byte(form.Encode()))
}

// setIfAny sets form's key to v unless v is empty.
func setIfAny(form url.Values, key, v string) {
	if v != "" {
		form.Set(key, v)
	}
}

func withBody(req *http.Request, body []byte) *http.Request {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return r
}

// metadataURLs are the places go-sdk looks for an issuer's metadata (RFC
// 8414 and OpenID Connect discovery, with path insertion and appending),
// without a trailing slash.
func metadataURLs(issuer string) map[string]bool {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	p := strings.Trim(u.Path, "/")
	out := map[string]bool{}
	if p == "" {
		out[origin+"/.well-known/oauth-authorization-server"] = true
		out[origin+"/.well-known/openid-configuration"] = true
		return out
	}
	out[origin+"/.well-known/oauth-authorization-server/"+p] = true
	out[origin+"/.well-known/openid-configuration/"+p] = true
	out[origin+"/"+p+"/.well-known/openid-configuration"] = true
	return out
}
