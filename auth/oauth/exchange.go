package oauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/diag"
)

// The token types and the grant of RFC 8693.
const (
	tokenTypeAccess = "urn:ietf:params:oauth:token-type:access_token"
	tokenTypeJWT    = "urn:ietf:params:oauth:token-type:jwt"
)

// exchanger is the token_exchange flow: heddle calls a server as the
// caller of each call. A request whose context carries the caller's token
// (heddle.WithCallerToken) is sent with a token the identity provider
// issued for the server in exchange for it (RFC 8693: the caller's token
// is the subject_token, heddle's client the actor, the server's resource
// per RFC 8707); a request whose context carries none — the handshake,
// listings, the standalone event stream, the DELETE that ends a session —
// is sent with heddle's own token, by client credentials at the same
// endpoint for the same resource.
//
// Exchanged tokens are cached by a digest of the caller's token until
// shortly before they expire, never past the caller's token's own expiry;
// concurrent exchanges of one token share one request; the cache holds at
// most maxExchanged tokens. The caller's token is never sent anywhere but
// the token endpoint, and is never in a log line or an error.
type exchanger struct {
	name     string
	cfg      Config
	client   *http.Client
	log      *slog.Logger
	secrets  *scrubber
	closing  context.Context // cancelled by Strategy.Close: ends the exchanges in flight
	now      func() time.Time
	flights  singleflight.Group
	cache    *exchangedCache
	endpoint endpoint

	mu  sync.Mutex
	own cachedToken // heddle's own token
}

// maxExchanged bounds the exchanged tokens one server's strategy keeps.
const maxExchanged = 1024

// renewBefore is how long before its expiry a token is no longer used:
// a request sent with it must still find it valid at the server.
const renewBefore = 30 * time.Second

// reuseUnknown is how long a token whose lifetime the provider did not
// give (expires_in) is used.
const reuseUnknown = time.Minute

// flightTimeout bounds one request to the token endpoint, which callers
// that share it may outlive.
const flightTimeout = 30 * time.Second

// maxTokenResponse bounds what is read of a token endpoint's answer.
const maxTokenResponse = 64 << 10

func newExchanger(cfg Config, client *http.Client, log *slog.Logger, sc *scrubber, closing context.Context) *exchanger {
	x := &exchanger{name: cfg.Name, cfg: cfg, client: client, log: log, secrets: sc, closing: closing,
		now: time.Now, cache: newExchangedCache(maxExchanged)}
	x.endpoint.url = cfg.IdPTokenEndpoint
	return x
}

// cachedToken is a token and when it stops being used.
type cachedToken struct {
	value string
	until time.Time
}

// ForCaller readies the token of ctx's caller: it returns an error
// wrapping authlive.ErrNoCallerToken when ctx carries no caller's token,
// TOKEN_EXCHANGE_REFUSED when the identity provider refuses the exchange,
// and TOOL_UNAVAILABLE when it cannot be asked.
func (x *exchanger) ForCaller(ctx context.Context) error {
	subject, ok := heddle.CallerToken(ctx)
	if !ok {
		return fmt.Errorf("%s: %w", x.name, authlive.ErrNoCallerToken)
	}
	_, err := x.exchanged(ctx, subject)
	return err
}

// Wrap sends each request with the token of its caller, or heddle's own
// for a request no caller made. Whatever Authorization header a request
// carries is replaced. A 401 drops the token it was sent with, so that the
// next request gets a new one.
func (x *exchanger) Wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		ctx := req.Context()
		subject, forCaller := heddle.CallerToken(ctx)
		var tok string
		var err error
		if forCaller {
			tok, err = x.exchanged(ctx, subject)
		} else {
			tok, err = x.ownToken(ctx)
		}
		if err != nil {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, err
		}
		r := req.Clone(ctx)
		r.Header.Set("Authorization", "Bearer "+tok)
		resp, err := next.RoundTrip(r)
		if err == nil && resp.StatusCode == http.StatusUnauthorized {
			x.forget(subject, forCaller, tok)
		}
		return resp, err
	})
}

// forget drops a token the server refused.
func (x *exchanger) forget(subject string, forCaller bool, tok string) {
	if forCaller {
		x.cache.drop(digest(subject), tok)
		x.log.Debug("oauth: the server refused an exchanged token; the next call exchanges again", "server", x.name)
		return
	}
	x.mu.Lock()
	if x.own.value == tok {
		x.own = cachedToken{}
	}
	x.mu.Unlock()
	x.log.Debug("oauth: the server refused heddle's own token; the next request asks for a new one", "server", x.name)
}

// exchanged returns the token the identity provider issues for the server
// in exchange for subject: from the cache, or by an exchange that
// concurrent callers of the same subject share.
func (x *exchanger) exchanged(ctx context.Context, subject string) (string, error) {
	key := digest(subject)
	if tok, ok := x.cache.get(key, x.now()); ok {
		return tok, nil
	}
	ch := x.flights.DoChan(string(key[:]), func() (any, error) {
		if tok, ok := x.cache.get(key, x.now()); ok {
			return tok, nil
		}
		fctx, cancel := x.flightContext(ctx)
		defer cancel()
		return x.exchange(fctx, key, subject)
	})
	return x.await(ctx, ch, "the token exchange")
}

// await waits for a flight's token within ctx: the flight goes on for the
// others that share it when this caller gives up.
func (x *exchanger) await(ctx context.Context, ch <-chan singleflight.Result, what string) (string, error) {
	select {
	case res := <-ch:
		if res.Err != nil {
			return "", res.Err
		}
		return res.Val.(string), nil
	case <-ctx.Done():
		return "", fmt.Errorf("%s: gave up waiting for %s: %w", x.name, what, ctx.Err())
	}
}

// flightContext is the context of one request to the token endpoint: not
// ended by the caller that started it (others may share it), but by its
// own timeout and by Close.
func (x *exchanger) flightContext(ctx context.Context) (context.Context, context.CancelFunc) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flightTimeout)
	stop := context.AfterFunc(x.closing, cancel)
	return fctx, func() { stop(); cancel() }
}

// exchange asks the identity provider for a token of the server's in
// exchange for subject (RFC 8693, section 2.1), and caches it.
func (x *exchanger) exchange(ctx context.Context, key [32]byte, subject string) (string, error) {
	form := x.params(grantTokenExchange)
	form.Set("subject_token", subject)
	form.Set("subject_token_type", tokenTypeAccess)
	start := x.now()
	tr, err := x.request(ctx, form)
	if err != nil {
		var oe *oauthError
		if errors.As(err, &oe) {
			if strings.Contains(subject, oe.code) {
				oe.code = "(not shown)" // a provider that echoes what it was sent
			}
			x.log.Debug("oauth: the identity provider refused the token exchange", "server", x.name, "error", oe.code)
			return "", diag.Wrap(diag.TokenExchangeRefused, err, "server %s: the identity provider refused to exchange the caller's token (%s)", x.name, oe.code)
		}
		return "", diag.Wrap(diag.ToolUnavailable, err, "server %s: the caller's token could not be exchanged: %s; try again later", x.name, err)
	}
	if t := tr.IssuedTokenType; t != "" && t != tokenTypeAccess && t != tokenTypeJWT {
		return "", diag.New(diag.TokenExchangeRefused, "server %s: the identity provider issued a token that is not an access token (issued_token_type)", x.name)
	}
	until := tr.until(start)
	if exp, ok := expiryOf(subject); ok && exp.Before(until) {
		until = exp
	}
	x.secrets.add(tr.AccessToken)
	if until.After(x.now()) {
		x.cache.put(key, cachedToken{value: tr.AccessToken, until: until}, x.now())
	}
	x.log.Debug("oauth: exchanged the caller's token", "server", x.name, "took", x.now().Sub(start).Round(time.Millisecond), "reused_for", until.Sub(x.now()).Round(time.Second))
	return tr.AccessToken, nil
}

// ownToken returns heddle's own token for the server, by client
// credentials at the token endpoint, for the same resource (and audience
// and scopes) as an exchange: the token of the requests no caller made.
func (x *exchanger) ownToken(ctx context.Context) (string, error) {
	x.mu.Lock()
	own := x.own
	x.mu.Unlock()
	if own.value != "" && x.now().Before(own.until) {
		return own.value, nil
	}
	ch := x.flights.DoChan("own", func() (any, error) {
		fctx, cancel := x.flightContext(ctx)
		defer cancel()
		start := x.now()
		tr, err := x.request(fctx, x.params("client_credentials"))
		if err != nil {
			return nil, fmt.Errorf("server %s: heddle's own token (client credentials at the identity provider): %w", x.name, err)
		}
		x.secrets.add(tr.AccessToken)
		x.mu.Lock()
		x.own = cachedToken{value: tr.AccessToken, until: tr.until(start)}
		x.mu.Unlock()
		return tr.AccessToken, nil
	})
	return x.await(ctx, ch, "heddle's own token")
}

// params are the parameters of a token request of grant, for the server's
// resource, audience and scopes.
func (x *exchanger) params(grant string) url.Values {
	form := url.Values{"grant_type": {grant}}
	if x.cfg.Resource != "" {
		form.Set("resource", x.cfg.Resource)
	}
	if x.cfg.Audience != "" {
		form.Set("audience", x.cfg.Audience)
	}
	if len(x.cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(x.cfg.Scopes, " "))
	}
	return form
}

// tokenResponse is a token endpoint's answer (RFC 6749 section 5.1, RFC
// 8693 section 2.2.1).
type tokenResponse struct {
	AccessToken     string          `json:"access_token"`
	TokenType       string          `json:"token_type"`
	IssuedTokenType string          `json:"issued_token_type"`
	ExpiresIn       json.RawMessage `json:"expires_in"`
}

// until is when a token issued at start stops being used: renewBefore
// (or a quarter of its lifetime, if shorter) before it expires.
func (t *tokenResponse) until(start time.Time) time.Time {
	var secs float64
	if err := json.Unmarshal(t.ExpiresIn, &secs); err != nil {
		var s string
		if json.Unmarshal(t.ExpiresIn, &s) != nil || json.Unmarshal([]byte(s), &secs) != nil {
			return start.Add(reuseUnknown)
		}
	}
	if secs <= 0 {
		return start.Add(reuseUnknown)
	}
	life := time.Duration(min(secs, 1<<31) * float64(time.Second))
	return start.Add(life - min(renewBefore, life/4))
}

// oauthError is a token endpoint's refusal: an OAuth error code (RFC
// 6749, section 5.2), shown; its description is not (it is the
// provider's text, which may quote what it was sent).
type oauthError struct {
	status int
	code   string
}

func (e *oauthError) Error() string {
	return fmt.Sprintf("the identity provider answered HTTP %d, error %s", e.status, e.code)
}

// request sends one token request and reads its answer, bounded.
func (x *exchanger) request(ctx context.Context, form url.Values) (*tokenResponse, error) {
	endpoint, err := x.endpoint.get(ctx, x.client, x.cfg.IdPIssuer)
	if err != nil {
		return nil, err
	}
	if x.cfg.TokenEndpointAuth == "client_secret_post" {
		form.Set("client_id", x.cfg.ClientID)
		form.Set("client_secret", x.cfg.ClientSecret.Reveal())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, errors.New("the token endpoint does not parse")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if x.cfg.TokenEndpointAuth != "client_secret_post" {
		req.SetBasicAuth(url.QueryEscape(x.cfg.ClientID), url.QueryEscape(x.cfg.ClientSecret.Reveal()))
	}
	resp, err := x.client.Do(req)
	if err != nil {
		return nil, x.secrets.scrub(fmt.Errorf("the token endpoint cannot be reached: %w", err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse+1))
	if err != nil {
		return nil, fmt.Errorf("reading the token endpoint's answer: %w", x.secrets.scrub(err))
	}
	if len(body) > maxTokenResponse {
		return nil, fmt.Errorf("the token endpoint's answer is over %d KiB", maxTokenResponse>>10)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && json.Unmarshal(body, &e) == nil && e.Error != "" {
			return nil, &oauthError{status: resp.StatusCode, code: errorCode(e.Error)}
		}
		return nil, fmt.Errorf("the token endpoint answered HTTP %d", resp.StatusCode)
	}
	var tr tokenResponse
	if err := json.Unmarshal(body, &tr); err != nil || tr.AccessToken == "" {
		return nil, errors.New("the token endpoint's answer holds no access_token")
	}
	if !strings.EqualFold(tr.TokenType, "bearer") {
		return nil, errors.New("the token endpoint issued a token that is not a bearer token (token_type)")
	}
	if strings.ContainsAny(tr.AccessToken, " \t\r\n") {
		return nil, errors.New("the token endpoint issued an access token with white space in it")
	}
	return &tr, nil
}

// errorCode is an OAuth error code as it may be shown: a word of lower-case
// letters and underscores, as every code of RFC 6749 and its extensions
// is, at most 64 of them. Anything else the provider wrote there is not
// shown: it may be what it was sent.
func errorCode(s string) string {
	if s == "" || len(s) > 64 || strings.TrimLeft(s, "abcdefghijklmnopqrstuvwxyz_") != "" {
		return "(not shown)"
	}
	return s
}

// endpoint is the identity provider's token endpoint: configured
// (idp_token_endpoint), or read once from the issuer's metadata; a failed
// read is tried again at the next request.
type endpoint struct {
	mu  sync.Mutex
	url string
}

func (e *endpoint) get(ctx context.Context, client *http.Client, issuer string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.url != "" {
		return e.url, nil
	}
	u, err := discoverTokenEndpoint(ctx, client, issuer)
	if err != nil {
		return "", err
	}
	e.url = u
	return u, nil
}

// discoverTokenEndpoint reads the token endpoint from the issuer's
// metadata (RFC 8414, then OpenID Connect discovery): its issuer must be
// the one configured, and the endpoint https (plain http on loopback).
func discoverTokenEndpoint(ctx context.Context, client *http.Client, issuer string) (string, error) {
	var tried []string
	for _, mu := range metadataLocations(issuer) {
		meta, status, err := getJSON(ctx, client, mu)
		if err != nil {
			return "", fmt.Errorf("the identity provider's metadata: %w", err)
		}
		if status == http.StatusNotFound {
			tried = append(tried, fmt.Sprint(status))
			continue
		}
		if status != http.StatusOK {
			return "", fmt.Errorf("the identity provider's metadata: HTTP %d", status)
		}
		var m struct {
			Issuer        string `json:"issuer"`
			TokenEndpoint string `json:"token_endpoint"`
		}
		if json.Unmarshal(meta, &m) != nil || m.TokenEndpoint == "" {
			return "", errors.New("the identity provider's metadata names no token_endpoint")
		}
		if strings.TrimSuffix(m.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			return "", errors.New("the identity provider's metadata names another issuer than idp_issuer")
		}
		if err := checkHTTPSOrLoopback(m.TokenEndpoint); err != nil {
			return "", fmt.Errorf("the identity provider's token_endpoint %v", err)
		}
		return m.TokenEndpoint, nil
	}
	return "", fmt.Errorf("the identity provider publishes no metadata at idp_issuer (HTTP %s): set idp_token_endpoint", strings.Join(tried, ", "))
}

// metadataLocations are where an issuer's metadata is looked for, in order.
func metadataLocations(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	p := strings.Trim(u.Path, "/")
	if p == "" {
		return []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server/" + p,
		origin + "/.well-known/openid-configuration/" + p,
		origin + "/" + p + "/.well-known/openid-configuration",
	}
}

// getJSON GETs u and returns its body, bounded, and its status.
func getJSON(ctx context.Context, client *http.Client, u string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, errors.New("idp_issuer does not parse")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse+1))
	if err != nil {
		return nil, 0, err
	}
	if len(body) > maxTokenResponse {
		return nil, 0, fmt.Errorf("the answer is over %d KiB", maxTokenResponse>>10)
	}
	return body, resp.StatusCode, nil
}

// digest is the key of a caller's token: the cache never holds the token.
func digest(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// expiryOf reads the exp claim of a JWT, unverified: the front door
// verified the token; here its expiry only bounds how long what it was
// exchanged for is used. A token that is no JWT has none.
func expiryOf(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(parts[1]) > 16<<10 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var c struct {
		Exp json.Number `json:"exp"`
	}
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if d.Decode(&c) != nil {
		return time.Time{}, false
	}
	f, err := c.Exp.Float64()
	if err != nil || f <= 0 || f > 1<<40 {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

// exchangedCache holds exchanged tokens by the digest of the caller's
// token, at most max of them: when full, expired tokens go first, then the
// one that expires soonest.
type exchangedCache struct {
	mu  sync.Mutex
	max int
	m   map[[32]byte]cachedToken
}

func newExchangedCache(max int) *exchangedCache {
	return &exchangedCache{max: max, m: map[[32]byte]cachedToken{}}
}

func (c *exchangedCache) get(key [32]byte, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		return "", false
	}
	if !now.Before(e.until) {
		delete(c.m, key)
		return "", false
	}
	return e.value, true
}

func (c *exchangedCache) put(key [32]byte, t cachedToken, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok && len(c.m) >= c.max {
		c.evict(now)
	}
	c.m[key] = t
}

// evict makes room for one token. c.mu is held.
func (c *exchangedCache) evict(now time.Time) {
	var soonest [32]byte
	var at time.Time
	for k, e := range c.m {
		if !now.Before(e.until) {
			delete(c.m, k)
			continue
		}
		if at.IsZero() || e.until.Before(at) {
			soonest, at = k, e.until
		}
	}
	if len(c.m) >= c.max {
		delete(c.m, soonest)
	}
}

// drop removes key's token if it is still tok.
func (c *exchangedCache) drop(key [32]byte, tok string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok && e.value == tok {
		delete(c.m, key)
	}
}

// len is how many tokens the cache holds.
func (c *exchangedCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
