package plan

import "github.com/heddlehq/heddle/config"

// Serve is the worker's front door as compiled: who may call it, the Host
// headers it accepts, and its limits, every default filled in. Token values
// are references, resolved by serve at start-up.
type Serve struct {
	// Auth is nil when the deployment sets no serve.auth: serve then
	// listens only on loopback and refuses /v1/ calls.
	Auth   *ServeAuth  `json:"auth,omitempty"`
	Hosts  []string    `json:"hosts,omitempty"`
	Limits ServeLimits `json:"limits"`
}

// ServeAuth is serve.auth as compiled. Only the settings of its kind are
// set.
type ServeAuth struct {
	Kind string `json:"kind"`

	Issuer      string            `json:"issuer,omitempty"`
	JWKSURL     string            `json:"jwks_url,omitempty"`
	Audience    string            `json:"audience,omitempty"`
	Algorithms  []string          `json:"algorithms,omitempty"`
	ClockSkewMS int               `json:"clock_skew_ms,omitempty"`
	Claims      map[string]string `json:"claims,omitempty"`

	Tokens map[string]*ServeToken `json:"tokens,omitempty"`

	Proxies []string `json:"proxies,omitempty"`

	Metrics bool `json:"metrics,omitempty"`
}

// ServeToken is one static token: its reference and the caller it stands
// for.
type ServeToken struct {
	TokenRef config.Ref        `json:"token_ref"`
	Subject  string            `json:"subject"`
	Roles    []string          `json:"roles,omitempty"`
	Claims   map[string]string `json:"claims,omitempty"`
}

// ServeLimits are serve.limits with their defaults.
type ServeLimits struct {
	MaxBodyBytes        int `json:"max_body_bytes"`
	MaxHeaderBytes      int `json:"max_header_bytes"`
	MaxInFlight         int `json:"max_in_flight"`
	MaxConnections      int `json:"max_connections"`
	ReadHeaderTimeoutMS int `json:"read_header_timeout_ms"`
	ReadTimeoutMS       int `json:"read_timeout_ms"`
	WriteTimeoutMS      int `json:"write_timeout_ms"`
	IdleTimeoutMS       int `json:"idle_timeout_ms"`
}
