// Package pluginsdk is for writing heddle authentication strategies as
// plugin binaries: a deployment's own way to authenticate, added without
// changing heddle. A strategy produces the HTTP headers that authenticate
// requests to a server (or a remote agent) and renews them when asked; heddle
// runs the binary, caches the headers it returns, and applies them to every
// request.
//
// A whole plugin is one main function:
//
//	func main() {
//		pluginsdk.Serve(func() pluginsdk.Strategy { return &apiKey{} })
//	}
//
//	type apiKey struct{ key string }
//
//	func (s *apiKey) Configure(_ context.Context, settings map[string]string) error {
//		s.key = settings["key_ref"] // resolved by heddle: the secret itself
//		if s.key == "" {
//			return pluginsdk.Errorf(pluginsdk.CodeInvalidSettings, "key_ref is required")
//		}
//		return nil
//	}
//
//	func (s *apiKey) Headers(context.Context) (pluginsdk.Headers, error) {
//		return pluginsdk.Headers{Values: http.Header{"X-Api-Key": {s.key}}}, nil
//	}
//
//	func (s *apiKey) Renew(ctx context.Context, _ string) (pluginsdk.Headers, error) {
//		return s.Headers(ctx)
//	}
//
// and the deployment declares it, with the binary's checksum:
//
//	ai:
//	  auth_plugins:
//	    api-key: {command: bin/heddle-auth-api-key, sha256: "<sha256sum of the binary>"}
//	  mcp_servers:
//	    catalog:
//	      url: https://catalog.internal.example.com/mcp
//	      auth: {kind: api-key, key_ref: ${secrets:/heddle/catalog/key}}
//
// # What heddle does with a strategy
//
// heddle starts one plugin process per declared plugin and runtime, shared
// by every server that names the plugin. Each such server gets its own
// strategy value, made by the function given to [Serve] and configured with
// that server's settings. Every other key of the server's auth block is a
// setting; *_ref settings arrive resolved, so a strategy receives secret
// values and must never log them or put them in an error.
//
// heddle calls [Strategy.Headers] once for a server's first request and caches
// the result until [Headers.ExpiresAt] (less a margin): requests made in the
// meantime never reach the plugin. It calls [Strategy.Renew] when the cached
// headers expire (reason [ReasonExpired]) or when the server answers 401
// (reason [ReasonUnauthorized]); in both cases one call serves every request
// waiting for it, and a request refused with 401 is retried once with the
// renewed headers, never more.
//
// The process sees no environment of heddle's, only the variables its
// ai.auth_plugins entry declares under env. It is killed when heddle closes
// the runtime, and dies with heddle even if heddle is killed. If it crashes,
// heddle starts it again on the next need and configures every strategy
// afresh, so a strategy keeps its state in memory only.
//
// Lines a plugin writes with the log or log/slog packages reach heddle's log
// at DEBUG, after heddle has blanked any secret value it gave the plugin and
// any header value the plugin returned; a plugin should log no secrets in
// the first place. Anything written to stdout is discarded.
package pluginsdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Strategy is an authentication strategy served by a plugin. heddle makes
// one value per server (see [Serve]); its methods may be called
// concurrently, so a strategy guards its own state.
type Strategy interface {
	// Configure receives the server's settings: every key of its auth block
	// but kind, with *_ref references resolved to their values, booleans as
	// "true" or "false" and lists as JSON arrays. It is called once, before
	// any other method; an error refuses the settings and fails heddle's
	// start-up with MCP_AUTH_STRATEGY_INVALID. Configure should not need the
	// network: credentials are fetched by Headers.
	Configure(ctx context.Context, settings map[string]string) error
	// Headers returns the headers that authenticate requests, fetching a
	// credential when the strategy has none yet.
	Headers(ctx context.Context) (Headers, error)
	// Renew returns fresh headers: the ones returned before have expired
	// (reason is ReasonExpired) or were refused by the server
	// (ReasonUnauthorized). Renew must not return the refused credential
	// again.
	Renew(ctx context.Context, reason string) (Headers, error)
}

// Reasons given to [Strategy.Renew].
const (
	// ReasonExpired: the headers reached their ExpiresAt.
	ReasonExpired = "expired"
	// ReasonUnauthorized: the server answered 401 to a request carrying them.
	ReasonUnauthorized = "unauthorized"
)

// Headers are the headers a strategy adds to each request.
type Headers struct {
	// Values are set on every request, replacing any of the same name.
	// Names must be valid header names; values may not contain line
	// breaks. Framing and protocol headers (Host, Content-Length,
	// Transfer-Encoding, Connection, Mcp-*) are refused.
	Values http.Header
	// ExpiresAt is when the credential stops being valid; heddle renews a
	// little before. The zero time means the headers do not expire (they
	// are renewed only when the server answers 401).
	ExpiresAt time.Time
}

// ErrorCode is a machine-readable error code, carried to heddle in the
// response (a plain error's type does not survive the process boundary).
type ErrorCode string

// Error codes.
const (
	// CodeInvalidSettings: the settings cannot work (a missing or malformed
	// value). The deployment must change. The default for a plain error
	// returned by Configure.
	CodeInvalidSettings ErrorCode = "INVALID_SETTINGS"
	// CodeDenied: the credential issuer refused the strategy's own
	// credential (a revoked bootstrap secret). Retrying will not help.
	CodeDenied ErrorCode = "DENIED"
	// CodeUnavailable: the credential issuer could not be reached or
	// failed; a later attempt may succeed.
	CodeUnavailable ErrorCode = "UNAVAILABLE"
	// CodeNotConfigured: a call named a strategy the process does not have
	// (it restarted). Sent by this package, never by a strategy; heddle
	// configures the strategy again and retries.
	CodeNotConfigured ErrorCode = "NOT_CONFIGURED"
	// CodeInternal: anything else. The default for a plain error returned
	// by Headers or Renew.
	CodeInternal ErrorCode = "INTERNAL"
)

// Error is an error with a code. Its message reaches heddle's errors and
// log, so it must not contain a secret.
type Error struct {
	Code    ErrorCode
	Message string
}

// Errorf returns an *Error with the given code.
func Errorf(code ErrorCode, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// codeOf returns err's code, or def when err carries none.
func codeOf(err error, def ErrorCode) (ErrorCode, string) {
	var e *Error
	if !errors.As(err, &e) || e.Code == "" {
		return def, err.Error()
	}
	if err == error(e) {
		return e.Code, e.Message
	}
	return e.Code, err.Error() // wrapped: keep the context
}
