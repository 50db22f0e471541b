package compile

import (
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/plan"
)

// jwtAlgorithms are the signature algorithms serve.auth kind jwt accepts:
// asymmetric ones only. none proves nothing, and an HMAC key would be the
// issuer's public key, which anyone can read.
var jwtAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// compileServe compiles the serve: section. The default write timeout
// outlasts the longest tool_timeout_ms of the agents, so that a call's own
// deadline ends it first.
func compileServe(dep *config.Deployment, arts []*config.Artifact) (plan.Serve, diag.Diagnostics) {
	s := dep.Serve
	l := s.Limits
	if !dep.Written("serve.limits.write_timeout_ms") || l.WriteTimeoutMS <= 0 {
		longest := config.DefaultToolTimeoutMS
		for _, a := range arts {
			longest = max(longest, a.Policies.ToolTimeoutMS)
		}
		l.WriteTimeoutMS = longest + config.ServeWriteMarginMS
	}
	out := plan.Serve{Hosts: s.Hosts, Limits: l}
	var ds diag.Diagnostics
	for i, h := range s.Hosts {
		if !validHost(h) {
			ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, config.Join("serve", "hosts")+indexPath(i),
				"not a host name or HOST:PORT").WithDetail("write the name callers use, as in their Host header: heddle.internal.example.com or heddle.internal.example.com:8443"))
		}
	}
	if s.Probes != nil {
		probes := *s.Probes
		out.Probes = &probes
		if !validListen(probes.Listen) {
			ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, config.Join("serve", "probes", "listen"),
				"not HOST:PORT").WithDetail("write the address the probes listen on: 127.0.0.1:8081, or :8081 on every interface (a kubelet probes the pod's IP); leave serve.probes out to serve them on the main listener only"))
		}
	}
	if s.ApprovalKeyRef != nil {
		ref := *s.ApprovalKeyRef
		out.ApprovalKeyRef = &ref
		ds = append(ds, grants.CheckRef(&ref, config.Join("serve", "approval_key_ref"))...)
	}
	st, sds := compileServeState(s.State)
	out.State = st
	ds = append(ds, sds...)
	if s.Auth == nil {
		return out, ds
	}
	a, ads := compileServeAuth(s.Auth)
	out.Auth = a
	return out, append(ds, ads...)
}

func compileServeAuth(a *config.ServeAuth) (*config.ServeAuth, diag.Diagnostics) {
	const p = "serve.auth"
	out := *a
	var ds diag.Diagnostics
	bad := func(path, format string, args ...any) {
		ds = append(ds, diag.Errorf(diag.ServeAuthInvalid, path, format, args...))
	}
	detail := func(format string, args ...any) { ds[len(ds)-1] = ds[len(ds)-1].WithDetail(format, args...) }
	// Settings of another kind are a mistake to point out, not to ignore:
	// an operator who wrote proxies under kind jwt believes they apply.
	foreign := func(kind string, set map[string]bool) {
		for key, written := range set {
			if written {
				bad(p+"."+key, "a setting of kind %s, which serve.auth.kind %q does not read", kind, a.Kind)
			}
		}
	}
	jwtSet := map[string]bool{"issuer": a.Issuer != "", "jwks_url": a.JWKSURL != "", "audience": a.Audience != "",
		"algorithms": len(a.Algorithms) > 0 && a.Kind != config.ServeAuthJWT, "claims": len(a.Claims) > 0 && a.Kind != config.ServeAuthJWT}
	tokensSet := map[string]bool{"tokens": len(a.Tokens) > 0}
	proxiesSet := map[string]bool{"proxies": len(a.Proxies) > 0}
	switch a.Kind {
	case config.ServeAuthJWT:
		foreign(config.ServeAuthTokens, tokensSet)
		foreign(config.ServeAuthTrustedHeaders, proxiesSet)
		if a.Issuer == "" {
			bad(p+".issuer", "missing: a JWT's iss must be checked")
			detail("write the issuer the tokens name, e.g. https://idp.example.com/realms/ops; its keys are found by OpenID discovery unless jwks_url is set")
		} else {
			ds = append(ds, grants.CheckURL(a.Issuer, diag.ServeAuthInvalid, p+".issuer")...)
		}
		if a.JWKSURL != "" {
			ds = append(ds, grants.CheckURL(a.JWKSURL, diag.ServeAuthInvalid, p+".jwks_url")...)
		}
		if a.Audience == "" {
			bad(p+".audience", "missing: a JWT's aud must be checked, or a token issued for another service would be accepted")
		}
		for i, alg := range a.Algorithms {
			if !slices.Contains(jwtAlgorithms, alg) {
				bad(p+".algorithms"+indexPath(i), "algorithm %q is not accepted", alg)
				detail("accepted: %s (none and the HMAC algorithms never are)", strings.Join(jwtAlgorithms, ", "))
			}
		}
		if a.ClockSkewMS > config.MaxServeClockSkewMS {
			bad(p+".clock_skew_ms", "at most %d ms", config.MaxServeClockSkewMS)
		}
		for key, claim := range a.Claims {
			if claim == "" {
				bad(p+".claims."+key, "empty: name the token claim it is read from")
			}
		}
	case config.ServeAuthTokens:
		foreign(config.ServeAuthJWT, jwtSet)
		foreign(config.ServeAuthTrustedHeaders, proxiesSet)
		if len(a.Tokens) == 0 {
			bad(p+".tokens", "missing: kind tokens needs at least one token")
		}
		for _, name := range slices.Sorted(maps.Keys(a.Tokens)) {
			tok := a.Tokens[name]
			tp := config.Join(p, "tokens", name)
			if tok == nil {
				bad(tp, "empty: a token needs token_ref and subject")
				continue
			}
			if tok.TokenRef == (config.Ref{}) {
				bad(tp+".token_ref", "missing: the reference the token is read from")
			}
			ds = append(ds, grants.CheckRef(&tok.TokenRef, tp+".token_ref")...)
			if tok.Subject == "" {
				bad(tp+".subject", "missing: the caller the token stands for")
			}
		}
	case config.ServeAuthTrustedHeaders:
		foreign(config.ServeAuthJWT, jwtSet)
		foreign(config.ServeAuthTokens, tokensSet)
		if len(a.Proxies) == 0 {
			bad(p+".proxies", "missing: the addresses of the proxies whose X-Heddle-* headers are believed")
			detail("a CIDR such as 10.0.0.0/8, or one address")
		}
		for i, px := range a.Proxies {
			if _, err := parseProxy(px); err != nil {
				bad(p+".proxies"+indexPath(i), "not a CIDR or an IP address")
			}
		}
	case config.ServeAuthNone:
		foreign(config.ServeAuthJWT, jwtSet)
		foreign(config.ServeAuthTokens, tokensSet)
		foreign(config.ServeAuthTrustedHeaders, proxiesSet)
	case "":
		bad(p+".kind", "missing: want jwt, tokens, trusted_headers or none")
	default:
		bad(p+".kind", "unknown kind %q: want jwt, tokens, trusted_headers or none", a.Kind)
	}
	return &out, ds
}

// parseProxy parses one serve.auth.proxies entry: a CIDR, or one address.
func parseProxy(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		return netip.ParsePrefix(s)
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// validHost reports whether h is a Host header value: a name or address,
// with an optional port, and nothing else.
func validHost(h string) bool {
	host := h
	if hp, port, err := net.SplitHostPort(h); err == nil {
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return false
		}
		host = hp
	}
	if host == "" || strings.ContainsAny(host, "/?#@ \t") {
		return false
	}
	return true
}

// validListen reports whether a is an address to listen on: HOST:PORT, an
// empty host for every interface, a port of 0 to 65535.
func validListen(a string) bool {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return false
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return false
	}
	return host == "" || validHost(host)
}

func indexPath(i int) string { return "[" + strconv.Itoa(i) + "]" }

// DefaultStateTimeoutMS is serve.state.timeout_ms's default, and
// MaxStateTimeoutMS its most: a store slower than that costs every call.
const (
	DefaultStateTimeoutMS = 250
	MaxStateTimeoutMS     = 5000
)

// compileServeState checks serve.state and fills in its defaults.
func compileServeState(in *config.ServeState) (plan.ServeState, diag.Diagnostics) {
	const p = "serve.state"
	out := plan.ServeState{Kind: config.StateMemory}
	if in != nil {
		out = *in
	}
	var ds diag.Diagnostics
	bad := func(path, format string, args ...any) {
		ds = append(ds, diag.Errorf(diag.ServeStateInvalid, path, format, args...))
	}
	switch out.Kind {
	case "":
		out.Kind = config.StateMemory
	case config.StateMemory, config.StateRedis:
	default:
		bad(p+".kind", "%q is not a kind of state: memory or redis", out.Kind)
	}
	switch {
	case out.Kind == config.StateRedis && out.URLRef == nil:
		bad(p+".url_ref", "missing: kind redis reads the Redis URL (redis:// or rediss://) by reference")
	case out.Kind == config.StateRedis:
		ref := *out.URLRef
		out.URLRef = &ref
		ds = append(ds, grants.CheckRef(&ref, p+".url_ref")...)
	case out.URLRef != nil:
		bad(p+".url_ref", "a setting of kind redis, which serve.state.kind %q does not read", out.Kind)
	}
	if out.Prefix == "" {
		out.Prefix = "heddle:"
	}
	switch out.OnError {
	case "":
		out.OnError = config.StateClosed
	case config.StateClosed, config.StateOpen:
	default:
		bad(p+".on_error", "%q: closed (refuse, the default) or open (admit, counted)", out.OnError)
	}
	switch {
	case out.TimeoutMS == 0:
		out.TimeoutMS = DefaultStateTimeoutMS
	case out.TimeoutMS < 0 || out.TimeoutMS > MaxStateTimeoutMS:
		bad(p+".timeout_ms", "%d: between 1 and %d ms", out.TimeoutMS, MaxStateTimeoutMS)
	}
	return out, ds
}
