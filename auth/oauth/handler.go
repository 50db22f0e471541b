package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// handler is the auth.OAuthHandler heddle hands go-sdk: it runs one of the
// SDK's handlers (inner) one authorization at a time, shares a run among
// the callers that need it, and hands out a token source that records the
// token in use.
type handler struct {
	name    string
	flow    string
	log     *slog.Logger
	closing context.Context // cancelled by Strategy.Close
	timeout time.Duration   // bounds one authorization
	secrets *scrubber
	// lazy builds inner at the first authorization, from what the failed
	// request and its response reveal (the enterprise flow needs the
	// server's authorization server; a refresh token, its token endpoint).
	// initial reports that inner starts with a token source to try first.
	lazy func(ctx context.Context, req *http.Request, resp *http.Response) (inner sdkauth.OAuthHandler, initial bool, err error)

	inner sdkauth.OAuthHandler // written only by a flight; flights never overlap

	mu     sync.Mutex
	ts     *trackedSource // nil until authorized
	flight *flight        // the authorization in progress
}

// flight is one authorization, shared by every caller that arrives while
// it runs.
type flight struct {
	done chan struct{}
	err  error
}

// TokenSource returns the current token source, nil before the first
// authorization.
func (h *handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ts == nil {
		return nil, nil
	}
	return h.ts, nil
}

// token returns the current access token, "" when there is none.
func (h *handler) token() string {
	h.mu.Lock()
	ts := h.ts
	h.mu.Unlock()
	if ts == nil {
		return ""
	}
	tok, err := ts.Token()
	if err != nil {
		h.log.Debug("oauth: no token", "server", h.name, "reason", err.Error())
		return ""
	}
	return tok.AccessToken
}

// Authorize runs the flow after req was refused with resp (401 or 403), and
// closes resp's body. One authorization runs at a time:
//
//   - a caller that arrives while one runs waits for it;
//   - one whose request carried an older token than the current one returns
//     at once, to retry with the current token;
//   - a 401 for a token that replaced a refused one moments ago is an error:
//     the server refuses fresh tokens, and authorizing again cannot help.
//
// The authorization runs detached from ctx (bounded by its own timeout and
// by Close), so one that needs a person — the redirect listener — survives a
// caller that gives up; ctx bounds only the wait.
func (h *handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	h.mu.Lock()
	f, ts := h.flight, h.ts
	switch {
	case f != nil:
		h.mu.Unlock()
		drain(resp)
		h.log.Debug("oauth: joining the authorization in progress", "server", h.name)
	case ts.current() != "" && ts.current() != sent:
		h.mu.Unlock()
		drain(resp)
		h.log.Debug("oauth: the token was renewed since the request was sent; retrying", "server", h.name)
		return nil
	case resp.StatusCode == http.StatusUnauthorized && sent != "" && ts.refusedFresh():
		h.mu.Unlock()
		drain(resp)
		h.log.Debug("oauth: the server refuses the token it just issued; not authorizing again", "server", h.name)
		return fmt.Errorf("%s refused a token issued %s ago to replace one it had refused: authorizing again would not help",
			h.name, time.Since(ts.at).Round(time.Millisecond))
	default:
		f = &flight{done: make(chan struct{})}
		h.flight = f
		h.mu.Unlock()
		go h.run(f, req, resp, sent != "" && resp.StatusCode == http.StatusUnauthorized)
	}
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return fmt.Errorf("%s: gave up waiting for authorization: %w", h.name, ctx.Err())
	}
}

// run performs one authorization and publishes its token source.
func (h *handler) run(f *flight, req *http.Request, resp *http.Response, afterRefusal bool) {
	defer drain(resp)
	// Not the caller's context: the run outlives callers that give up, and
	// the token source it leaves behind must not hold a caller's values.
	base, cancel := context.WithTimeout(context.Background(), h.timeout)
	stop := context.AfterFunc(h.closing, cancel)
	fctx := newDetachable(base)
	start := time.Now()
	h.log.Debug("oauth: authorizing", "server", h.name, "flow", h.flow, "status", resp.StatusCode)
	ts, err := h.authorize(fctx, req, resp)
	var tracked *trackedSource
	if err == nil {
		tracked = &trackedSource{src: ts, h: h, at: time.Now(), afterRefusal: afterRefusal}
		_, err = tracked.Token() // primes current(); cached by the SDK's source
	}
	// The SDK's client-credentials source keeps fctx for later renewals:
	// from here on it must outlive this authorization.
	fctx.detach()
	stop()
	cancel()
	if err != nil {
		err = h.secrets.scrub(fmt.Errorf("%s: authorization (flow %s) failed: %w", h.name, h.flow, err))
		h.log.Debug("oauth: authorization failed", "server", h.name, "flow", h.flow, "reason", err.Error())
	} else {
		h.log.Debug("oauth: authorized", "server", h.name, "flow", h.flow, "took", time.Since(start).Round(time.Millisecond))
	}
	h.mu.Lock()
	if err == nil {
		h.ts = tracked
	}
	h.flight = nil
	f.err = err
	h.mu.Unlock()
	close(f.done)
}

func (h *handler) authorize(ctx context.Context, req *http.Request, resp *http.Response) (oauth2.TokenSource, error) {
	if h.inner == nil {
		inner, initial, err := h.lazy(ctx, req, resp)
		if err != nil {
			return nil, err
		}
		h.inner = inner
		if initial {
			ts, err := inner.TokenSource(ctx)
			if err == nil && ts != nil {
				if _, err = ts.Token(); err == nil {
					return ts, nil
				}
			}
			if err != nil && !invalidGrant(err) {
				return nil, fmt.Errorf("the refresh token cannot be used: %w", err)
			}
			h.log.Warn("oauth: the refresh token was rejected; running the authorization code flow", "server", h.name)
		}
	}
	if err := h.inner.Authorize(ctx, req, resp); err != nil {
		return nil, err
	}
	ts, err := h.inner.TokenSource(ctx)
	if err != nil {
		return nil, err
	}
	if ts == nil {
		return nil, errors.New("the authorization produced no token")
	}
	return ts, nil
}

func invalidGrant(err error) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == "invalid_grant"
}

func drain(resp *http.Response) {
	if resp != nil && resp.Body != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}
}

// trackedSource is the token source handed out: the SDK's, recording the
// access token in use (so a late 401 for an older token is told from one
// for the current token) and adding every token it sees to the scrubber.
type trackedSource struct {
	src oauth2.TokenSource
	h   *handler
	// at is when the authorization that made it ended; afterRefusal, that
	// it replaced a token the server had refused with a 401.
	at           time.Time
	afterRefusal bool

	mu   sync.Mutex
	last string // "" after a failure: the next 401 authorizes again
}

// Token returns the SDK source's token; renewal is the SDK source's (and
// golang.org/x/oauth2's): 10 s ahead of expiry, once for all callers.
func (t *trackedSource) Token() (*oauth2.Token, error) {
	tok, err := t.src.Token()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.last = ""
		return nil, t.h.secrets.scrub(err)
	}
	if tok.AccessToken != t.last {
		t.h.secrets.add(tok.AccessToken, tok.RefreshToken)
		if idt, ok := tok.Extra("id_token").(string); ok {
			t.h.secrets.add(idt)
		}
		if t.last != "" {
			t.h.log.Debug("oauth: token renewed", "server", t.h.name, "expires", tok.Expiry.Round(time.Second))
		}
		t.last = tok.AccessToken
	}
	return tok, nil
}

// freshWindow is how soon after a renewal a 401 for the new token means
// the server refuses fresh tokens, so that authorizing again cannot help.
const freshWindow = 5 * time.Second

// refusedFresh reports whether t replaced a refused token less than
// freshWindow ago: a 401 for it now means a 401 storm, not an expiry or a
// revocation. nil-safe.
func (t *trackedSource) refusedFresh() bool {
	return t != nil && t.afterRefusal && time.Since(t.at) < freshWindow
}

// current returns the access token last handed out; nil-safe.
func (t *trackedSource) current() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// detachable is a context that follows its parent's cancellation until
// detach, and is never cancelled afterwards (its values stay). go-sdk's
// client-credentials handler builds its token source on the context of
// Authorize and keeps it for every renewal; handing it a context that a
// finished request has cancelled would make every renewal fail.
//
// It has a Done channel of its own, closed when the parent ends before
// detach, and its Err is set before that channel closes and never unset:
// a context derived from it before detach (whose goroutine reads Err once
// Done is closed) always finds the error that closed it.
type detachable struct {
	context.Context // the parent's values, no cancellation
	parent          context.Context
	done            chan struct{}
	stop            func() bool

	mu       sync.Mutex
	detached bool
	err      error
}

func newDetachable(parent context.Context) *detachable {
	d := &detachable{Context: context.WithoutCancel(parent), parent: parent, done: make(chan struct{})}
	d.stop = context.AfterFunc(parent, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if !d.detached {
			d.err = parent.Err()
			close(d.done)
		}
	})
	return d
}

// detach ends the following of the parent: from now on a parent that
// ends cancels nothing. One that ended before stays ended.
func (d *detachable) detach() {
	d.mu.Lock()
	d.detached = true
	d.mu.Unlock()
	d.stop()
}

func (d *detachable) Deadline() (time.Time, bool) {
	d.mu.Lock()
	detached := d.detached && d.err == nil
	d.mu.Unlock()
	if detached {
		return time.Time{}, false
	}
	return d.parent.Deadline()
}

func (d *detachable) Done() <-chan struct{} { return d.done }

func (d *detachable) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// scrubber removes secret values from error text: the configured secrets
// and the tokens seen so far (the most recent ones, bounded).
type scrubber struct {
	mu     sync.Mutex
	fixed  []string
	recent []string
}

const maxRecentSecrets = 32

func newScrubber(secrets ...string) *scrubber {
	s := &scrubber{}
	for _, v := range secrets {
		if len(v) >= 4 {
			s.fixed = append(s.fixed, v)
		}
	}
	return s
}

func (s *scrubber) add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if len(v) < 4 {
			continue
		}
		s.recent = append(s.recent, v)
		if len(s.recent) > maxRecentSecrets {
			s.recent = s.recent[len(s.recent)-maxRecentSecrets:]
		}
	}
}

// scrub returns err with every known secret replaced by [redacted] and any
// token endpoint response body (golang.org/x/oauth2 quotes it) left out.
// errors.Is and errors.As still reach the original.
func (s *scrubber) scrub(err error) error {
	if err == nil {
		return nil
	}
	if _, done := err.(*scrubbedError); done {
		return err
	}
	msg := err.Error()
	if i := strings.Index(msg, "\nResponse: "); i >= 0 {
		msg = msg[:i] + " (response body not shown)"
	}
	s.mu.Lock()
	values := append(append([]string(nil), s.fixed...), s.recent...)
	s.mu.Unlock()
	for _, v := range values {
		msg = strings.ReplaceAll(msg, v, "[redacted]")
	}
	return &scrubbedError{msg: msg, err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
