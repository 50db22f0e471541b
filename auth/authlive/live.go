// Package authlive builds the live half of authentication strategies: one
// value per server (or remote agent), built once at start-up from the plan's
// auth block and shared by every client of that server, applied as an
// http.RoundTripper wrapper so that one strategy serves MCP and A2A clients
// alike.
//
//	s, err := live.Build(ctx, spec, resolver)
//	client := &http.Client{Transport: s.Wrap(http.DefaultTransport)}
//
// Builders for further kinds register with [Register]; the compiler never
// imports this package.
package authlive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/secrets"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
)

// Strategy is a built authentication strategy. Implementations are safe for
// concurrent use; a renewing strategy renews once for all its callers.
type Strategy interface {
	// Wrap returns a RoundTripper that authenticates requests sent through
	// next. It must clone a request before changing it.
	Wrap(next http.RoundTripper) http.RoundTripper
	// Close releases what the strategy holds (a plugin process, a listener).
	Close() error
}

// OAuthStrategy is implemented by strategies that run the MCP client
// library's own OAuth flow (kind: oauth). A Streamable HTTP transport hands
// the handler to go-sdk, which sets the bearer token on every request and,
// on a 401 or 403, calls Authorize once and retries the request once. The
// transport's HTTP client is still wrapped with Wrap: once the handler has
// been handed out, Wrap leaves alone the requests the SDK authenticates, and
// it keeps serving clients that have no such hook (A2A, legacy SSE) with the
// same token.
type OAuthStrategy interface {
	Strategy
	OAuthHandler() sdkauth.OAuthHandler
}

// CallerStrategy is implemented by strategies that send a request made
// for a caller as that caller (oauth's flow token_exchange): a request
// whose context carries the caller's token (heddle.WithCallerToken) is
// sent with credentials obtained for that caller; one whose context
// carries none — a connection's own requests, which no caller made — with
// the strategy's own.
//
// A kind asks ForCaller before it sends a call made for a caller, so that
// a call that cannot be made as its caller is refused before anything is
// sent. ForCaller readies the caller's credentials (an exchange, cached
// for the requests that follow) and returns an error wrapping
// ErrNoCallerToken when ctx carries no caller's token, or a coded error
// when the credentials cannot be had (TOKEN_EXCHANGE_REFUSED,
// TOOL_UNAVAILABLE). Its errors never hold a token.
type CallerStrategy interface {
	Strategy
	ForCaller(ctx context.Context) error
}

// ErrNoCallerToken is what CallerStrategy.ForCaller returns (wrapped) for
// a context that carries no caller's token: the kind refuses the call
// with a code of its own.
var ErrNoCallerToken = errors.New("the call carries no token of its caller's")

// Env is what a builder gets besides the settings.
type Env struct {
	Secrets secrets.Resolver
	// Name is the server or remote agent the strategy serves, for messages.
	Name string
	// Purpose is "mcp" or "a2a".
	Purpose string
	// URL is the server's (or remote agent's) URL, the resource a strategy
	// requests tokens for unless its settings say otherwise (RFC 8707);
	// empty when the kind does not say. EnvFor leaves it to the kind.
	URL string
	// Plugins are the plan's auth plugins (plan.Plan.AuthPlugins): the
	// builder of plugin-declared strategies finds its binary here, by the
	// plugin's name. The map is treated as read-only.
	Plugins map[string]*plan.AuthPlugin
	// Logger receives the strategy's log (a plugin's lifecycle and its
	// own log lines, at DEBUG). nil discards. Nothing a strategy logs
	// carries a secret value.
	Logger *slog.Logger
}

// EnvFor is the Env of the strategy of one of a kind's dependencies: the
// runtime's secrets, the plan's plugins and the kind's logger, from the
// environment the kind was opened with (driver.Env), so that no kind
// builds one field by field and forgets a field. purpose is the kind
// ("mcp", "a2a", or one of an application's); name names the dependency
// in messages ("server runbooks").
func EnvFor(env driver.Env, purpose, name string) Env {
	return Env{Secrets: env.Secrets, Name: name, Purpose: purpose, Plugins: env.Plan.AuthPlugins, Logger: env.Logger}
}

// Builder builds a strategy from an auth block's settings.
type Builder func(ctx context.Context, env Env, settings map[string]any) (Strategy, error)

var (
	mu       sync.RWMutex
	builders = map[string]Builder{}
)

// Register adds a builder for kind; it panics on a duplicate.
func Register(kind string, b Builder) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := builders[kind]; dup {
		panic(fmt.Sprintf("live: builder %q registered twice", kind))
	}
	builders[kind] = b
}

// Build builds the strategy for spec. Errors carry a code: SECRET_UNRESOLVED
// or SECRET_EMPTY for references, MCP_HEADERS_REF_INVALID for a malformed
// header payload, MCP_AUTH_STRATEGY_INVALID for anything else.
func Build(ctx context.Context, env Env, spec *plan.Auth) (Strategy, error) {
	if spec == nil {
		return nil, nil
	}
	mu.RLock()
	b, ok := builders[spec.Kind]
	if spec.Plugin {
		b, ok = builders[PluginKind]
	}
	mu.RUnlock()
	if !ok {
		return nil, diag.New(diag.MCPAuthStrategyInvalid, "%s: no live implementation of auth strategy %q in this build", env.Name, spec.Kind)
	}
	settings := spec.Settings
	if spec.Plugin {
		settings = withKind(settings, spec.Kind)
	}
	s, err := b(ctx, env, settings)
	if err != nil {
		if diag.CodeOf(err) == "" {
			return nil, diag.Wrap(diag.MCPAuthStrategyInvalid, err, "%s: auth strategy %q cannot be built", env.Name, spec.Kind)
		}
		return nil, err
	}
	return s, nil
}

// PluginKind is the builder key for strategies declared as auth plugins; the
// plugin's own name is passed in settings under "kind", and its declaration
// in Env.Plugins. The builder is auth/plugin's (the go-plugin host), which
// registers itself when imported; the runtime imports it.
const PluginKind = "@plugin"

func withKind(s map[string]any, kind string) map[string]any {
	out := make(map[string]any, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	out["kind"] = kind
	return out
}

// Ref returns the reference stored under key in settings.
func Ref(settings map[string]any, key string) (config.Ref, bool) {
	switch v := settings[key].(type) {
	case *config.Ref:
		if v != nil {
			return *v, true
		}
	case config.Ref:
		return v, true
	case string:
		r := config.ParseRef(v)
		return r, r.Valid()
	}
	return config.Ref{}, false
}

// Resolve resolves the reference stored under key.
func Resolve(ctx context.Context, env Env, settings map[string]any, key string) (secrets.Value, error) {
	ref, ok := Ref(settings, key)
	if !ok {
		return secrets.Value{}, diag.New(diag.MCPAuthStrategyInvalid, "%s: setting %s is missing", env.Name, key)
	}
	v, err := env.Secrets.Resolve(ctx, ref)
	if err != nil {
		return secrets.Value{}, fmt.Errorf("%s: %w", env.Name, err)
	}
	return v, nil
}

// headerStrategy sets headers read from secret references on every
// request. When a server answers 401 it reads the references again — a
// secret rotated in its store (a file a Kubernetes secret mounts, say) is
// taken up without a restart — and, when they changed, sends the request
// once more with the new headers. Reading again is shared by concurrent
// requests and done at most once per reloadEvery; a 401 with unchanged
// secrets is the server's answer, passed on.
type headerStrategy struct {
	header atomic.Pointer[http.Header]
	load   func(context.Context) (http.Header, error) // nil: fixed headers

	mu       sync.Mutex // one reload at a time
	reloaded time.Time
}

// reloadEvery is how often, at the most, a strategy reads its secrets
// again after 401s.
const reloadEvery = time.Second

// Headers returns a strategy that sets h on every request, replacing any
// header of the same name (h's keys must be canonical). When load is not
// nil, a 401 has it read the headers again, as the static and bearer
// strategies do; nil keeps h fixed. A server's headers: map is one, applied
// outside the server's own strategy, so that the strategy's headers win.
func Headers(h http.Header, load func(context.Context) (http.Header, error)) Strategy {
	return newHeaderStrategy(h, load)
}

func newHeaderStrategy(h http.Header, load func(context.Context) (http.Header, error)) *headerStrategy {
	s := &headerStrategy{load: load}
	s.header.Store(&h)
	return s
}

func (h *headerStrategy) Wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sent := h.header.Load()
		resp, err := next.RoundTrip(WithHeaders(req, *sent))
		if err != nil || resp.StatusCode != http.StatusUnauthorized || h.load == nil || !replayable(req) {
			return resp, err
		}
		cur := h.reload(req.Context(), sent)
		if cur == sent {
			return resp, nil
		}
		retry, err := rewound(req)
		if err != nil {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return next.RoundTrip(WithHeaders(retry, *cur))
	})
}

// reload reads the secrets again, unless they were read less than
// reloadEvery ago or the headers changed since sent was read, and returns
// the headers now in force. A failure to read keeps the headers as they
// were.
func (h *headerStrategy) reload(ctx context.Context, sent *http.Header) *http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur := h.header.Load(); cur != sent || time.Since(h.reloaded) < reloadEvery {
		return cur
	}
	h.reloaded = time.Now()
	fresh, err := h.load(ctx)
	if err != nil || equalHeaders(fresh, *sent) {
		return sent
	}
	h.header.Store(&fresh)
	return &fresh
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		if !slices.Equal(va, b[k]) {
			return false
		}
	}
	return true
}

// replayable reports whether req's body can be sent again.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// rewound is a shallow copy of req with a fresh body.
func rewound(req *http.Request) (*http.Request, error) {
	r := new(http.Request)
	*r = *req
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = body
	}
	return r, nil
}

// WithHeaders returns a shallow copy of req whose header map is a copy of
// req's with every header of h set, replacing any value of the same name,
// so that each is sent exactly once. req itself is not changed (as
// http.RoundTripper requires); the value slices of h are shared, never
// written. It is the per-request work of every header-setting strategy:
// cheaper than req.Clone, which also copies the URL, trailers and form.
// h's keys must be in canonical form.
func WithHeaders(req *http.Request, h http.Header) *http.Request {
	r := new(http.Request)
	*r = *req
	r.Header = make(http.Header, len(req.Header)+len(h))
	for k, vs := range req.Header {
		r.Header[k] = vs
	}
	for k, vs := range h {
		r.Header[k] = vs
	}
	return r
}

func (h *headerStrategy) Close() error { return nil }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// ParseHeaderPayload parses a static header payload: one "Name=value" pair
// whose value carries no white space (anything richer — several headers, a
// value with spaces such as "Bearer …", a credential that renews — belongs
// in a strategy). The payload is never repeated in the error.
func ParseHeaderPayload(payload string) (http.Header, error) {
	name, value, ok := strings.Cut(strings.TrimSpace(payload), "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || value == "" || strings.ContainsAny(name, " \t\r\n:") || strings.ContainsAny(value, " \t\r\n") {
		return nil, diag.New(diag.MCPHeadersRefInvalid, "the header payload is not one Name=value pair (payload not shown)")
	}
	h := http.Header{}
	h.Set(name, value)
	return h, nil
}

func init() {
	Register("static", func(ctx context.Context, env Env, s map[string]any) (Strategy, error) {
		load := func(ctx context.Context) (http.Header, error) {
			payload, err := Resolve(ctx, env, s, "headers_ref")
			if err != nil {
				return nil, err
			}
			h, err := ParseHeaderPayload(payload.Reveal())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", env.Name, err)
			}
			return h, nil
		}
		h, err := load(ctx)
		if err != nil {
			return nil, err
		}
		return newHeaderStrategy(h, load), nil
	})
	Register("bearer", func(ctx context.Context, env Env, s map[string]any) (Strategy, error) {
		load := func(ctx context.Context) (http.Header, error) {
			token, err := Resolve(ctx, env, s, "token_ref")
			if err != nil {
				return nil, err
			}
			if strings.ContainsAny(token.Reveal(), " \t\r\n") {
				return nil, diag.New(diag.MCPAuthStrategyInvalid, "%s: the bearer token contains white space (token not shown)", env.Name)
			}
			h := http.Header{}
			h.Set("Authorization", "Bearer "+token.Reveal())
			return h, nil
		}
		h, err := load(ctx)
		if err != nil {
			return nil, err
		}
		return newHeaderStrategy(h, load), nil
	})
}
