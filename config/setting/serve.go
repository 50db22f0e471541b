package setting

// Serve is the serve: section of api.yaml: the worker's own front door,
// what `heddle serve` answers on. It says who may call the invoke API and
// the MCP facade, which Host headers are accepted, and how much one worker
// takes in at once.
type Serve struct {
	// Auth says how callers of /v1/ and /mcp/ are authenticated. Without
	// it, serve refuses to listen on an address that is not loopback, and
	// on loopback refuses /v1/ and /mcp/ requests: kind none must be
	// written to allow them.
	Auth *ServeAuth `koanf:"auth" json:"auth,omitempty"`
	// Hosts are the host names accepted in a request's Host header besides
	// localhost (on a loopback or all-interfaces listen address); an IP
	// address is always accepted. A name is accepted with any port, HOST:PORT
	// only with that port. Others are refused (DNS rebinding: a browser page
	// that resolves its own name to this worker sends that name).
	Hosts []string `koanf:"hosts" json:"hosts,omitempty"`
	// Limits bound what the worker reads and holds.
	Limits ServeLimits `koanf:"limits" json:"limits"`
	// Probes, when set, serves the probes on a listener of their own.
	Probes *ServeProbes `koanf:"probes" json:"probes,omitempty"`
	// ApprovalKeyRef is the reference of the key that seals the state of
	// the MCP facade's input_required results at protocol 2026-07-28 (an
	// approval asked, an upstream server's input): one key of at least 32
	// characters, or two separated by white space while a key rotates (the
	// new one first; both open). Without it each worker makes a key of its
	// own at start: a host must then retry at the worker that asked.
	ApprovalKeyRef *Ref `koanf:"approval_key_ref" json:"approval_key_ref,omitempty"`
	// State says where what outlives a request is kept: rate counters,
	// conversations, the facade's accepted states. Default: kind memory.
	State *ServeState `koanf:"state" json:"state,omitempty"`
}

// ServeState is serve.state: this worker's memory, or a Redis a fleet of
// workers shares.
type ServeState struct {
	// Kind is memory (the default: each worker keeps its own) or redis.
	Kind string `koanf:"kind" json:"kind"`
	// URLRef is the reference of the Redis URL, redis:// or rediss://
	// (TLS); it may hold a password. kind redis only.
	URLRef *Ref `koanf:"url_ref" json:"url_ref,omitempty"`
	// Prefix starts every key heddle writes. Default "heddle:".
	Prefix string `koanf:"prefix" json:"prefix,omitempty"`
	// OnError is what a rate limit does while the store cannot be reached:
	// closed (the default) refuses the call with STATE_UNAVAILABLE, open
	// admits it and counts it in heddle_state_fallbacks_total.
	OnError string `koanf:"on_error" json:"on_error,omitempty"`
	// TimeoutMS bounds one operation on the store. Default 250.
	TimeoutMS int `koanf:"timeout_ms" json:"timeout_ms,omitempty"`
}

// serve.state kinds and on_error values.
const (
	StateMemory = "memory"
	StateRedis  = "redis"
	StateClosed = "closed"
	StateOpen   = "open"
)

// ServeProbes is serve.probes: a listener of the probes' own, so that a
// kubelet or a load balancer never waits behind callers.
type ServeProbes struct {
	// Listen is the HOST:PORT /livez, /readyz and /metrics are also served
	// on, with short timeouts and a small connection bound of their own;
	// the main listener serves them too. Port 0 picks a free port.
	Listen string `koanf:"listen" json:"listen"`
}

// ServeAuth is serve.auth: one way of telling who a caller is.
type ServeAuth struct {
	// Kind is jwt, tokens, trusted_headers or none.
	Kind string `koanf:"kind" json:"kind"`

	// kind: jwt — bearer JWTs verified against the issuer's keys.

	// Issuer is the token issuer (the iss claim); its OpenID discovery
	// document gives the keys' URL unless JWKSURL is set.
	Issuer string `koanf:"issuer" json:"issuer,omitempty"`
	// JWKSURL is where the signing keys are read from, when the issuer has
	// no discovery document.
	JWKSURL string `koanf:"jwks_url" json:"jwks_url,omitempty"`
	// Audience is the aud a token must carry.
	Audience string `koanf:"audience" json:"audience,omitempty"`
	// Algorithms are the signature algorithms accepted. Default [RS256].
	// none and the HMAC algorithms are refused.
	Algorithms []string `koanf:"algorithms" json:"algorithms,omitempty"`
	// ClockSkewMS is the leeway on exp, nbf and iat. Default 30000, at most
	// 300000.
	ClockSkewMS int `koanf:"clock_skew_ms" json:"clock_skew_ms,omitempty"`
	// Claims maps token claims to the caller's identity: subject (default
	// sub) and roles (a claim holding a list of strings, or a
	// space-separated string) are the identity's; any other key names an
	// identity claim, read from the token claim it maps to.
	Claims map[string]string `koanf:"claims" json:"claims,omitempty"`

	// kind: tokens — static bearer tokens, each standing for one caller.
	Tokens map[string]*ServeToken `koanf:"tokens" json:"tokens,omitempty"`

	// kind: trusted_headers — X-Heddle-Subject, X-Heddle-Roles and
	// X-Heddle-Claim-NAME set by a proxy that authenticated the caller,
	// believed only from these addresses (CIDRs, or single addresses).
	Proxies []string `koanf:"proxies" json:"proxies,omitempty"`

	// Metrics says whether /metrics needs an authenticated caller too.
	// Default false: the probes and /metrics answer anyone who can reach
	// the worker.
	Metrics bool `koanf:"metrics" json:"metrics,omitempty"`
}

// ServeToken is one static token of serve.auth kind tokens and the caller
// it stands for.
type ServeToken struct {
	TokenRef Ref               `koanf:"token_ref" json:"token_ref"`
	Subject  string            `koanf:"subject" json:"subject"`
	Roles    []string          `koanf:"roles" json:"roles,omitempty"`
	Claims   map[string]string `koanf:"claims" json:"claims,omitempty"`
}

// ServeLimits bound what one worker reads and holds. Zero is the default.
type ServeLimits struct {
	// MaxBodyBytes caps a request's body. Default 1 MiB.
	MaxBodyBytes int `koanf:"max_body_bytes" json:"max_body_bytes"`
	// MaxHeaderBytes caps a request's header. Default 64 KiB.
	MaxHeaderBytes int `koanf:"max_header_bytes" json:"max_header_bytes"`
	// MaxInFlight bounds the calls served at once; one more is answered
	// 503 TOO_BUSY. Default 1024.
	MaxInFlight int `koanf:"max_in_flight" json:"max_in_flight"`
	// MaxConnections bounds the open connections; one more closes the
	// connection idle longest or, when none is idle, waits until one
	// closes. Default 4096.
	MaxConnections int `koanf:"max_connections" json:"max_connections"`
	// ReadHeaderTimeoutMS bounds reading a request's header. Default 5000.
	ReadHeaderTimeoutMS int `koanf:"read_header_timeout_ms" json:"read_header_timeout_ms"`
	// ReadTimeoutMS bounds reading a whole request, body included.
	// Default 30000.
	ReadTimeoutMS int `koanf:"read_timeout_ms" json:"read_timeout_ms"`
	// WriteTimeoutMS bounds writing a response, from the end of the
	// request's header. Default: the longest tool_timeout_ms of the
	// agents plus 5000, so that a call's own deadline ends it first.
	WriteTimeoutMS int `koanf:"write_timeout_ms" json:"write_timeout_ms"`
	// IdleTimeoutMS closes a keep-alive connection idle that long.
	// Default 60000.
	IdleTimeoutMS int `koanf:"idle_timeout_ms" json:"idle_timeout_ms"`
}

// serve.auth kinds.
const (
	ServeAuthJWT            = "jwt"
	ServeAuthTokens         = "tokens"
	ServeAuthTrustedHeaders = "trusted_headers"
	ServeAuthNone           = "none"
)
