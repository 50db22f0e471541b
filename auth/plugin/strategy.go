package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/auth/pluginsdk"
	"github.com/heddlehq/heddle/diag"
)

// MaxSkew is the most by which cached headers are renewed ahead of their
// expiry; shorter-lived headers are renewed a tenth of their lifetime ahead.
const MaxSkew = 30 * time.Second

// MaxCallTime bounds one call to a plugin (Configure, Headers or Renew)
// when the caller's context sets no shorter deadline.
const MaxCallTime = 30 * time.Second

// strategy is one server's plugin strategy: an instance configured in the
// shared plugin process, and the headers it last returned, cached here.
// It is safe for concurrent use.
type strategy struct {
	p        *proc
	id       string // the instance's name in the process
	name     string // "server catalog", for messages
	settings map[string]string
	log      *slog.Logger

	// cur is read lock-free by every request: the fast path.
	cur atomic.Pointer[entry]
	// configured is the process generation this instance was configured
	// in; another generation means the process restarted since.
	configured atomic.Uint64

	mu     sync.Mutex
	flight *flight // the fetch in progress, shared by all who need it
	gen    uint64  // the last entry's generation

	closeOnce sync.Once
}

// entry is one set of headers. gen numbers entries: a renewal asked for
// because of an entry is done once, however many requests it failed.
type entry struct {
	header    http.Header
	gen       uint64
	refreshAt time.Time // zero: never expires
}

func (e *entry) fresh(now time.Time) bool {
	return e.refreshAt.IsZero() || now.Before(e.refreshAt)
}

type flight struct {
	done chan struct{}
	e    *entry
	err  error
}

// Wrap returns a RoundTripper that sets the cached headers on each request,
// replacing any of the same names. Headers past their refresh time are
// renewed first (once for all concurrent requests). A request answered 401
// causes one renewal — shared by every request that failed with the same
// headers — and is sent once more with the new headers; the second answer,
// whatever it is, is returned. A request whose body cannot be replayed
// (no GetBody) is not retried.
func (s *strategy) Wrap(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{s: s, next: next}
}

// Close releases the strategy's reference on the plugin process; the last
// one kills it. Close is idempotent.
func (s *strategy) Close() error {
	s.closeOnce.Do(s.p.release)
	return nil
}

type transport struct {
	s    *strategy
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	e, err := t.s.current(ctx)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.next.RoundTrip(authlive.WithHeaders(req, e.header))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil // the body is spent: the caller sees the 401
	}
	e2, err := t.s.refresh(ctx, e, pluginsdk.ReasonUnauthorized)
	if err != nil {
		drain(resp)
		return nil, err
	}
	r := authlive.WithHeaders(req, e2.header)
	if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
		if r.Body, err = req.GetBody(); err != nil {
			drain(resp)
			return nil, err
		}
	}
	drain(resp)
	t.s.log.Debug("request refused with 401; sending it once more with renewed credentials", "server", t.s.name, "generation", e2.gen)
	return t.next.RoundTrip(r)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// drain reads a little of a response being dropped, so its connection can
// be reused, and closes it.
func drain(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	_ = resp.Body.Close()
}

// current returns the cached headers when still fresh — with no lock and
// no call to the plugin — and fetches them otherwise.
func (s *strategy) current(ctx context.Context) (*entry, error) {
	e := s.cur.Load()
	if e != nil && e.fresh(time.Now()) {
		return e, nil
	}
	return s.refresh(ctx, e, pluginsdk.ReasonExpired)
}

// refresh replaces seen (nil: none yet) with new headers: Headers the first
// time, Renew(reason) after. Concurrent callers that saw the same entry share
// one call; a caller that saw an older entry than the current one gets the
// current one with no call at all.
func (s *strategy) refresh(ctx context.Context, seen *entry, reason string) (*entry, error) {
	var seenGen uint64
	if seen != nil {
		seenGen = seen.gen
	}
	s.mu.Lock()
	if cur := s.cur.Load(); cur != nil && cur.gen != seenGen {
		s.mu.Unlock()
		return cur, nil // renewed since the caller looked: no call
	}
	// cur is the caller's generation: the flight in progress, if any, is
	// the renewal of that generation (only a flight changes cur).
	f := s.flight
	if f == nil {
		f = &flight{done: make(chan struct{})}
		s.flight = f
		// The call runs on its own: a caller that gives up does not cancel
		// it for the others. It keeps the caller's deadline, at most
		// MaxCallTime.
		cctx, cancel := callContext(ctx)
		go func() {
			defer cancel()
			s.run(cctx, f, seen == nil, reason)
		}()
	}
	s.mu.Unlock()
	select {
	case <-f.done:
		return f.e, f.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: waiting for auth plugin %q: %w", s.name, s.p.name, ctx.Err())
	}
}

func callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := time.Now().Add(MaxCallTime)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	return context.WithDeadline(context.WithoutCancel(ctx), d)
}

func (s *strategy) run(ctx context.Context, f *flight, first bool, reason string) {
	now := time.Now()
	res, err := s.fetch(ctx, first, reason)
	s.mu.Lock()
	if err == nil {
		s.gen++
		f.e = &entry{header: res.header, gen: s.gen, refreshAt: refreshAt(now, res.expiresAt)}
		s.cur.Store(f.e)
	} else {
		f.err = err
	}
	s.flight = nil
	s.mu.Unlock()
	close(f.done)
	if err != nil {
		s.log.Warn("auth plugin could not supply credentials", "server", s.name, "plugin", s.p.name, "code", diag.CodeOf(err), "plugin_code", PluginCode(err))
		s.log.Debug("auth plugin could not supply credentials", "server", s.name, "plugin", s.p.name, "reason", err.Error())
		return
	}
	if first {
		s.log.Debug("auth plugin credentials fetched", "server", s.name, "plugin", s.p.name, "generation", f.e.gen, "expires_at", res.expiresAt)
		return
	}
	s.log.Debug("auth plugin credentials renewed", "server", s.name, "plugin", s.p.name, "reason", reason, "generation", f.e.gen, "expires_at", res.expiresAt)
}

// refreshAt is when headers fetched at now and expiring at exp are renewed:
// a tenth of their lifetime early, at most MaxSkew. It keeps now's
// monotonic reading, so a wall-clock step does not matter.
func refreshAt(now, exp time.Time) time.Time {
	if exp.IsZero() {
		return time.Time{}
	}
	ttl := exp.Sub(now)
	if ttl <= 0 {
		return now // already expired: use once, renew next time
	}
	return now.Add(ttl - min(ttl/10, MaxSkew))
}

// fetch calls the plugin: Configure first when this instance is not
// configured in the running process, then Headers (first) or Renew. A
// process that does not answer is restarted once within the call; an
// instance the process does not know is configured again once.
func (s *strategy) fetch(ctx context.Context, first bool, reason string) (result, error) {
	for attempt := 0; ; attempt++ {
		w, gen, err := s.p.ensure(ctx)
		if err != nil {
			return result{}, s.wrap(err)
		}
		if s.configured.Load() != gen {
			if err = w.configure(ctx, s.id, s.settings); err == nil {
				s.configured.Store(gen)
			}
		}
		var res result
		if err == nil {
			if first {
				res, err = w.headers(ctx, s.id)
			} else {
				res, err = w.renew(ctx, s.id, reason)
			}
		}
		var (
			be *brokenError
			pe *pluginError
		)
		switch {
		case err == nil:
			s.p.healthy()
			for _, vs := range res.header {
				s.p.red.add(vs...)
			}
			return res, nil
		case errors.As(err, &be) && attempt == 0:
			s.p.broken(gen, err)
			continue
		case errors.As(err, &pe) && pe.Code == pluginsdk.CodeNotConfigured && attempt == 0:
			s.configured.Store(0)
			continue
		case errors.As(err, &be):
			s.p.broken(gen, err)
		}
		return result{}, s.wrap(err)
	}
}

// configure configures the instance at build time.
func (s *strategy) configure(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		w, gen, err := s.p.ensure(ctx)
		if err != nil {
			return s.wrap(err)
		}
		err = w.configure(ctx, s.id, s.settings)
		var be *brokenError
		switch {
		case err == nil:
			s.configured.Store(gen)
			return nil
		case errors.As(err, &be):
			s.p.broken(gen, err)
			if attempt == 0 {
				continue
			}
		}
		return s.wrap(err)
	}
}

// wrap gives err a code and the server's and plugin's names, with known
// secrets blanked out of anything the plugin said.
func (s *strategy) wrap(err error) error {
	var pe *pluginError
	var be *brokenError
	switch {
	case errors.As(err, &pe):
		clean := &pluginError{Code: pe.Code, Message: s.p.red.redact(pe.Message)}
		return diag.Wrap(diag.MCPAuthStrategyInvalid, clean, "%s: auth plugin %q: %s", s.name, s.p.name, clean.Error())
	case errors.As(err, &be):
		return diag.Wrap(diag.MCPAuthStrategyInvalid, redactedError(s.p.red, err), "%s: auth plugin %q did not answer", s.name, s.p.name)
	case errors.Is(err, errClosed):
		return diag.Wrap(diag.MCPAuthStrategyInvalid, err, "%s: auth plugin %q is closed", s.name, s.p.name)
	case diag.CodeOf(err) != "":
		return fmt.Errorf("%s: %w", s.name, err)
	}
	return fmt.Errorf("%s: auth plugin %q: %w", s.name, s.p.name, err)
}

// PluginCode returns the code a plugin reported in err (INVALID_SETTINGS,
// DENIED, UNAVAILABLE, …), or "" when the failure was not the strategy's.
func PluginCode(err error) pluginsdk.ErrorCode {
	var pe *pluginError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

var (
	_ authlive.Strategy = (*strategy)(nil)
	_ http.RoundTripper = (*transport)(nil)
)
