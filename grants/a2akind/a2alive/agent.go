package a2alive

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/a2akind"
	"github.com/heddlehq/heddle/runtime/driver"
)

// remote is one remote agent, shared by every grant of it. Its card, and the
// endpoint chosen from it, are set once a fetch succeeds; until then the
// agent is down. It is safe for concurrent use.
type remote struct {
	inst   *instance
	name   string
	spec   *a2akind.Agent
	origin *url.URL // scheme and host of spec.URL: the only place credentials go
	client *http.Client
	strat  authlive.Strategy

	ids atomic.Int64 // JSON-RPC request ids

	mu      sync.Mutex
	ep      *endpoint // nil while down
	tool    *mcp.Tool
	gen     uint64
	code    diag.Code // why it is down
	reason  string    // driver.Reason of why it is down
	state   driver.State
	since   time.Time // when state last changed
	fetched time.Time

	sup *driver.Supervisor // fetches the card again while the agent is down
}

func newRemote(inst *instance, name string, spec *a2akind.Agent, base http.RoundTripper, strat authlive.Strategy) (*remote, error) {
	u, err := url.Parse(spec.URL)
	if err != nil || u.Host == "" {
		return nil, diag.New(diag.A2AAgentUnreachable, "remote agent %s: its url cannot be parsed (value redacted)", name)
	}
	rt := base
	if strat != nil {
		rt = strat.Wrap(base)
	}
	a := &remote{inst: inst, name: name, spec: spec, origin: &url.URL{Scheme: u.Scheme, Host: u.Host}, strat: strat,
		state: driver.StateConnecting, since: time.Now(), code: diag.A2AAgentUnreachable}
	a.client = &http.Client{Transport: rt, CheckRedirect: a.checkRedirect}
	a.sup = driver.NewSupervisor(inst.ctx, a.refetch, nil)
	a.tool = a.describe(nil)
	a.gen = 1
	return a, nil
}

// checkRedirect follows a redirect only within the agent's origin: the auth
// strategy adds credentials to every request its transport sends.
func (a *remote) checkRedirect(req *http.Request, via []*http.Request) error {
	if !sameOrigin(a.origin, req.URL) {
		return errors.New("redirect to another origin refused")
	}
	if len(via) >= 5 {
		return errors.New("too many redirects")
	}
	return nil
}

// connect fetches the card and chooses the endpoint. An error carries
// A2A_AGENT_UNREACHABLE.
func (a *remote) connect(ctx context.Context) error {
	c, err := a.fetchCard(ctx)
	var ep *endpoint
	if err == nil {
		ep, err = a.choose(c)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		coded := diag.Wrap(diag.A2AAgentUnreachable, err, "remote agent %s: %s", a.name, safeReason(err, a.origin.Host))
		a.setState(driver.StateDown)
		a.code, a.reason = diag.A2AAgentUnreachable, driver.Reason(coded, a.name)
		return coded
	}
	a.setState(driver.StateReady)
	a.ep, a.code, a.reason, a.fetched = ep, "", "", time.Now()
	a.tool = a.describe(c)
	a.gen++
	a.inst.events.Stale(a.name) // the card may describe the agent anew
	return nil
}

// setState moves the agent to st; since moves only when the state changes.
// a.mu is held.
func (a *remote) setState(st driver.State) {
	if a.state != st {
		a.state, a.since = st, time.Now()
	}
}

// endpoint returns where to send calls, or nil while the agent is down.
func (a *remote) endpoint() *endpoint {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ep
}

// markDown records that a call could not reach the agent, and wakes the
// supervisor, which fetches its card again.
func (a *remote) markDown() {
	a.mu.Lock()
	if a.ep == nil {
		a.mu.Unlock()
		return
	}
	a.setState(driver.StateDown)
	a.ep, a.code, a.reason = nil, diag.A2AAgentUnreachable, "a call could not reach it; fetching its card again"
	a.gen++
	a.mu.Unlock()
	a.inst.events.Stale(a.name)
	a.inst.log.Warn("remote agent unavailable", "agent", a.name, "code", diag.A2AAgentUnreachable)
	a.sup.Wake()
}

// recheck has the supervisor fetch the card now and waits for it: within
// ctx, at most driver.RecheckWait, and at most half of what is left of
// ctx, so that a call with a short deadline is refused rather than timed
// out. It returns the endpoint, or nil while the agent is still down.
func (a *remote) recheck(ctx context.Context) *endpoint {
	wait := driver.RecheckWait
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d)/2)
	}
	rctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	_ = a.sup.Recheck(rctx)
	return a.endpoint()
}

// refetch is one attempt of the supervisor: it fetches the card, under the
// start-up budget.
func (a *remote) refetch(ctx context.Context) error {
	if a.endpoint() != nil {
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, time.Duration(a.inst.startup)*time.Millisecond)
	defer cancel()
	err := a.connect(actx)
	switch {
	case err == nil:
		a.inst.log.Info("remote agent available", "agent", a.name)
	case ctx.Err() == nil:
		a.inst.log.Debug("remote agent still unavailable", "agent", a.name, "reason", diag.Reason(err))
	}
	return err
}

// tools returns the agent's one tool and its generation.
func (a *remote) tools() ([]*mcp.Tool, uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return []*mcp.Tool{a.tool}, a.gen
}

func (a *remote) status() driver.Dependency {
	a.mu.Lock()
	defer a.mu.Unlock()
	since := a.since.UTC().Truncate(time.Millisecond)
	d := driver.Dependency{Name: a.name, Kind: KindName, State: a.state, Since: &since, Required: a.spec.Required, Tools: 1,
		Agents: slices.Clone(a.spec.GrantedTo)}
	if a.state != driver.StateReady {
		d.Code, d.Reason = a.code, a.reason
	}
	if !a.fetched.IsZero() {
		t := a.fetched.UTC().Truncate(time.Millisecond)
		d.ListedAt = &t
	}
	return d
}

// sameOrigin reports whether two URLs share scheme, host and port (a
// scheme's default port written or not).
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(hostPort(a), hostPort(b))
}

func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}
