package config

import "github.com/heddlehq/heddle/config/setting"

// The serve: section of api.yaml; see [setting.Serve].
type (
	Serve       = setting.Serve
	ServeProbes = setting.ServeProbes
	ServeAuth   = setting.ServeAuth
	ServeToken  = setting.ServeToken
	ServeLimits = setting.ServeLimits
	ServeState  = setting.ServeState
)

// serve.state kinds and on_error values.
const (
	StateMemory = setting.StateMemory
	StateRedis  = setting.StateRedis
	StateClosed = setting.StateClosed
	StateOpen   = setting.StateOpen
)

// serve.auth kinds.
const (
	ServeAuthJWT            = setting.ServeAuthJWT
	ServeAuthTokens         = setting.ServeAuthTokens
	ServeAuthTrustedHeaders = setting.ServeAuthTrustedHeaders
	ServeAuthNone           = setting.ServeAuthNone
)

// Defaults of serve.
const (
	DefaultServeClockSkewMS         = 30000
	MaxServeClockSkewMS             = 300000
	DefaultServeMaxBodyBytes        = 1 << 20
	DefaultServeMaxHeaderBytes      = 64 << 10
	DefaultServeMaxInFlight         = 1024
	DefaultServeMaxConnections      = 4096
	DefaultServeReadHeaderTimeoutMS = 5000
	DefaultServeReadTimeoutMS       = 30000
	DefaultServeIdleTimeoutMS       = 60000
	// ServeWriteMarginMS is what the default write timeout adds to the
	// longest tool_timeout_ms.
	ServeWriteMarginMS = 5000
)

// limitSettings lists serve.limits' settings with their paths and defaults.
func limitSettings(l *ServeLimits) []struct {
	path string
	v    *int
	def  int
} {
	return []struct {
		path string
		v    *int
		def  int
	}{
		{"serve.limits.max_body_bytes", &l.MaxBodyBytes, DefaultServeMaxBodyBytes},
		{"serve.limits.max_header_bytes", &l.MaxHeaderBytes, DefaultServeMaxHeaderBytes},
		{"serve.limits.max_in_flight", &l.MaxInFlight, DefaultServeMaxInFlight},
		{"serve.limits.max_connections", &l.MaxConnections, DefaultServeMaxConnections},
		{"serve.limits.read_header_timeout_ms", &l.ReadHeaderTimeoutMS, DefaultServeReadHeaderTimeoutMS},
		{"serve.limits.read_timeout_ms", &l.ReadTimeoutMS, DefaultServeReadTimeoutMS},
		{"serve.limits.write_timeout_ms", &l.WriteTimeoutMS, 0}, // the compiler's, from the agents
		{"serve.limits.idle_timeout_ms", &l.IdleTimeoutMS, DefaultServeIdleTimeoutMS},
	}
}
