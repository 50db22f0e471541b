// Package statestore is what the workers of a fleet of heddle serve share
// (serve.state): with kind memory nothing is shared and each worker keeps
// its own state, as one worker always has; with kind redis the rate
// counters of policies.limits, the conversations' loaded tools and the MCP
// facade's accepted states live in one Redis every worker reaches, so that
// a fleet behind a load balancer behaves as one worker.
//
// The store is a dependency like an MCP server: [Store.Dependency] is its
// line in /readyz and heddle health, and every operation is bounded by
// serve.state.timeout_ms, so that a store that is slow or gone costs a call
// its timeout, never a hang. The Redis client reconnects by itself. An
// operation that fails is STATE_UNAVAILABLE; the URL, which may hold a
// password, is never shown.
package statestore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heddlehq/heddle/config/setting"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/secrets"
)

// A Store is serve.state opened. A nil *Store, and one of kind memory, is
// a worker's own memory: Shared reports false and the callers keep their
// state as they always have. It is safe for concurrent use.
type Store struct {
	cfg     plan.ServeState
	rdb     *redis.Client
	timeout time.Duration
	log     *slog.Logger

	mu    sync.Mutex
	state driver.State
	since time.Time
	err   error    // the last failure, while down
	hide  []string // what a reason must not show: the URL, its password
}

// Open opens cfg: for kind redis it resolves url_ref with res and makes
// the client (it does not wait for the store: a store that is down at
// start is a dependency that is down, and the worker starts). A URL that
// does not resolve is the resolver's code; one that is not a Redis URL is
// SERVE_STATE_INVALID, the value not shown.
func Open(ctx context.Context, cfg plan.ServeState, res secrets.Resolver, log *slog.Logger) (*Store, error) {
	quietOnce.Do(func() { redis.SetLogger(quiet{}) })
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{cfg: cfg, timeout: time.Duration(cfg.TimeoutMS) * time.Millisecond, log: log, state: driver.StateReady, since: time.Now()}
	if s.timeout <= 0 {
		s.timeout = 250 * time.Millisecond
	}
	if cfg.Kind != setting.StateRedis {
		return s, nil
	}
	if cfg.URLRef == nil {
		return nil, diag.New(diag.ServeStateInvalid, "serve.state kind redis has no url_ref")
	}
	v, err := res.Resolve(ctx, *cfg.URLRef)
	if err != nil {
		return nil, diag.Wrap(diag.CodeOf(err), err, "serve.state.url_ref: %v", err)
	}
	opts, err := redis.ParseURL(strings.TrimSpace(v.Reveal()))
	if err != nil {
		// go-redis's message may quote the URL, and so its password.
		return nil, diag.New(diag.ServeStateInvalid, "serve.state.url_ref (%s) does not hold a Redis URL: redis://[user:password@]host:port/db, or rediss:// for TLS (value not shown)", cfg.URLRef)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = s.timeout, s.timeout, s.timeout
	opts.ContextTimeoutEnabled = true
	// A call's own deadline bounds every operation: no retries, one dial
	// (a refused dial is known at once, not after five).
	opts.MaxRetries, opts.DialerRetries = -1, 1
	opts.ClientName = "heddle"
	s.hide = []string{strings.TrimSpace(v.Reveal()), opts.Password}
	s.rdb = redis.NewClient(opts)
	s.state, s.since = driver.StateConnecting, time.Now()
	return s, nil
}

// Shared reports whether the state is a fleet's: kind redis.
func (s *Store) Shared() bool { return s != nil && s.rdb != nil }

// Client is the Redis client; nil unless Shared.
func (s *Store) Client() *redis.Client {
	if s == nil {
		return nil
	}
	return s.rdb
}

// Key is the key of parts under serve.state.prefix, parts joined by ":".
// Parts are the callers' own (agent names, conversation ids, hashes of
// subjects): none may hold a ":" that would make two keys one.
func (s *Store) Key(parts ...string) string {
	return s.cfg.Prefix + strings.Join(parts, ":")
}

// OpenOnError reports serve.state.on_error: open (admit when the store
// cannot count) rather than closed.
func (s *Store) OpenOnError() bool { return s != nil && s.cfg.OnError == setting.StateOpen }

// Bounded returns ctx bounded by serve.state.timeout_ms.
func (s *Store) Bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// Observe records the outcome of an operation on the store: an error that
// says the store could not be reached (or did not answer in time) makes
// the store down until an operation succeeds. It returns err as
// STATE_UNAVAILABLE, saying why without the URL; nil and redis.Nil (a key
// that does not exist) are returned as they are. what names the operation
// ("counting policies.limits").
func (s *Store) Observe(err error, what string) error {
	if err == nil || errors.Is(err, redis.Nil) {
		s.set(driver.StateReady, nil)
		return err
	}
	reason := why(err)
	coded := diag.Wrap(diag.StateUnavailable, err, "the state store (serve.state, redis) %s while %s; try again later", reason, what)
	s.set(driver.StateDown, coded)
	return coded
}

// why says in words why an operation failed.
func why(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), strings.Contains(err.Error(), "connection refused"):
		return "refused the connection"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "did not answer within serve.state.timeout_ms"
	case errors.Is(err, context.Canceled):
		return "was not waited for (the call ended)"
	case strings.Contains(err.Error(), "NOAUTH"), strings.Contains(err.Error(), "WRONGPASS"):
		return "refused the credentials in its URL"
	}
	return "could not be reached (" + diag.Clip(redactHost(err.Error())) + ")"
}

// redactHost keeps an error's words and drops what looks like a URL.
func redactHost(msg string) string {
	for _, scheme := range []string{"redis://", "rediss://"} {
		if i := strings.Index(msg, scheme); i >= 0 {
			msg = msg[:i] + "<url>"
		}
	}
	return msg
}

func (s *Store) set(st driver.State, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != st {
		if st == driver.StateReady {
			s.log.Info("the state store answers again", "store", "redis")
		} else {
			s.log.Warn("the state store cannot be reached", "store", "redis", "code", diag.CodeOf(err), "reason", err.Error())
		}
		s.state, s.since = st, time.Now()
	}
	s.err = err
}

// Check pings the store, within ctx and the timeout, and records what it
// found. A store of kind memory is always ready.
func (s *Store) Check(ctx context.Context) error {
	if !s.Shared() {
		return nil
	}
	ctx, cancel := s.Bounded(ctx)
	defer cancel()
	return s.Observe(s.rdb.Ping(ctx).Err(), "being checked")
}

// Dependency is the store's line in a health report; ok is false for a
// store of kind memory, which has none.
func (s *Store) Dependency() (driver.Dependency, bool) {
	if !s.Shared() {
		return driver.Dependency{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	since := s.since
	d := driver.Dependency{Name: "redis", Kind: "state", State: s.state, Since: &since, Required: true}
	if s.err != nil {
		d.Code, d.Reason = diag.CodeOf(s.err), driver.Reason(s.err, "", s.hide...)
	}
	return d, true
}

// Close closes the client.
func (s *Store) Close() error {
	if !s.Shared() {
		return nil
	}
	return s.rdb.Close()
}

// String names the store for a log: its kind, never its URL.
func (s *Store) String() string {
	if !s.Shared() {
		return "memory"
	}
	return fmt.Sprintf("redis (%s)", s.cfg.URLRef)
}

// quiet is go-redis's logger: silent. Its lines (a failed dial, with the
// address) are the Store's to report, once, coded (Observe).
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once
