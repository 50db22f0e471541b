package mcplive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/grants/mcpkind/internal/bodylimit"
	"github.com/heddlehq/heddle/grants/mcpkind/internal/childproc"
	"github.com/heddlehq/heddle/grants/mcpkind/internal/mcphttp"
	"github.com/heddlehq/heddle/grants/mcpkind/internal/mcpstdio"
	"github.com/heddlehq/heddle/grants/mcpkind/internal/sseconn"
	"github.com/heddlehq/heddle/internal/resultcap"
	"github.com/heddlehq/heddle/runtime/driver"
)

// server is the one shared client of one MCP server: a session, its cached
// tool list, and the supervisor that reconnects it. Calls share the session
// with no lock; the mutex guards only the fields below it.
type server struct {
	inst   *instance
	spec   *mcpkind.Server
	name   string
	log    *slog.Logger
	client *mcp.Client
	strat  authlive.Strategy
	// progressFuncs routes progress notifications: token → the
	// func(driver.Progress) of the call that asked for them.
	progressFuncs sync.Map
	// screened holds the suspicious tool definitions already logged
	// (screen), so that each is logged once, not at every listing.
	screened sync.Map
	// headers sets the server's headers: map, outside strat, so that the
	// strategy's headers win for one name; nil without headers.
	headers authlive.Strategy
	env     []string // resolved child environment (stdio)
	httpT   *http.Transport
	stderr  *childproc.StderrLog

	peerAttrs []attribute.KeyValue // of every span of its requests

	stale atomic.Bool // a list_changed arrived; re-list before the next use
	slots *slots      // max_concurrent; nil: no bound
	lazy  bool        // connect: lazy — connected on first use, its tools from the lock until then
	hints wireHints   // the hints the server sent, by tool name

	// ctx is the server's own: its supervisor's and its background
	// listings' context, done at the last release. A server outlives the
	// runtime that opened it when a reload adopts it (reopen.go).
	ctx  context.Context
	stop context.CancelFunc

	mu         sync.Mutex
	sess       *mcp.ClientSession
	cmd        *exec.Cmd
	statuses   *statusWatch  // the HTTP statuses sess was answered with; nil for stdio
	wire       *wireConn     // sess's connection, when heddle built its transport (not Kind.Dial's)
	state      driver.State  // ready only with a session over which the tools were listed
	since      time.Time     // when state last changed
	code       diag.Code     // why the server is not ready
	downErr    error         // the coded error of why it is not ready
	reason     error         // the transport's reason (debug only)
	hide       []string      // the secret values of env, kept out of health's reason
	shown      string        // driver.Reason of downErr: health's reason
	attempt    chan struct{} // non-nil while a connection attempt runs
	opening    bool          // start-up runs, and will report the outcome
	recovering bool          // the supervisor's attempt runs
	tools      []*mcp.Tool
	gen        uint64 // bumped whenever tools change
	listedAt   time.Time
	listing    chan struct{} // non-nil while a listing runs
	closing    bool
	sup        *driver.Supervisor // brings the server back while it is not ready
	refs       int
	owners     []*instance // the instances that hold the server, oldest first: they hear of its tools
	wg         sync.WaitGroup
}

// acquire takes a reference on the server; release drops it, and the last
// release closes the session. It fails once the server is closed.
func (s *server) acquire() (release func(), ok bool) {
	if !s.hold() {
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(s.release) }, true
}

// hold takes a reference for the length of one call, without allocating:
// the caller must call release exactly once when it returns true.
func (s *server) hold() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.refs++
	return true
}

func (s *server) release() {
	s.mu.Lock()
	s.refs--
	last := s.refs == 0
	if last {
		s.closing = true
		s.state = driver.StateClosed
		s.stop()
	}
	if !last {
		s.mu.Unlock()
		return
	}
	sess, cmd, attempt := s.sess, s.cmd, s.attempt
	s.sess, s.cmd, s.wire = nil, nil, nil
	s.mu.Unlock()
	closeSession(sess, cmd)
	if attempt != nil {
		<-attempt // a connect in flight finishes (and closes its own session)
	}
	s.sup.Wait()
	s.wg.Wait()
	if s.strat != nil {
		_ = s.strat.Close()
	}
	if s.headers != nil {
		_ = s.headers.Close()
	}
	if s.httpT != nil {
		s.httpT.CloseIdleConnections()
	}
}

// closeSession closes a session and kills its child's process group.
func closeSession(sess *mcp.ClientSession, cmd *exec.Cmd) {
	if sess != nil {
		_ = sess.Close()
	}
	childproc.KillGroup(cmd)
}

// transport builds the MCP transport for one connection attempt, and what
// the attempt keeps to explain a failure.
func (s *server) transport() (mcp.Transport, *attempt) {
	at := &attempt{started: time.Now()}
	if s.inst.kind.Dial != nil {
		return s.inst.kind.Dial(s.name), at
	}
	limit := resultcap.HardLimit(s.spec.MaxResultBytes) // a larger message is refused as it is read
	switch s.spec.Transport {
	case "stdio":
		at.mark = s.stderr.Mark()
		at.cmd = childproc.Command(s.spec.Command, s.spec.Args, s.env, s.spec.Dir, s.stderr)
		at.stdio = &keepConn{Transport: mcpstdio.NewTransport(at.cmd, &mcpstdio.Options{Terminate: 2 * time.Second, MaxMessageBytes: limit})}
		return &wireTransport{Transport: at.stdio, hints: &s.hints}, at
	case "sse":
		at.cut = newHandshakeCut()
		hc := s.httpClient(at, limit)
		if s.spec.Auth != nil { // headers_ref or auth: timeout_ms bounds the idle event stream too
			hc.Transport = sseconn.IdleBound(hc.Transport, time.Duration(s.spec.TimeoutMS)*time.Millisecond)
		}
		return &wireTransport{Transport: sseconn.NewTransport(&mcp.SSEClientTransport{Endpoint: s.spec.URL, HTTPClient: hc, MaxEventSize: bodylimit.EventSize(limit)}), hints: &s.hints}, at
	}
	at.cut = newHandshakeCut()
	o := mcphttp.Options{Endpoint: s.spec.URL, Client: s.httpClient(at, limit), MaxRetries: 3, MaxEventBytes: bodylimit.EventSize(limit)}
	if oa, ok := s.strat.(authlive.OAuthStrategy); ok {
		o.OAuth = oa.OAuthHandler() // the transport sets the token; on 401/403 one Authorize, one retry
	}
	return &wireTransport{Transport: mcphttp.NewTransport(o), hints: &s.hints}, at
}

// httpClient is the HTTP client of one connection attempt: the server's
// transport, its strategy's credentials, its headers: map (outside the
// strategy), a watch on the statuses it answers, the bound of what the
// transport reads of each answer (bodylimit: it hands the transport — heddle's
// Streamable HTTP one, go-sdk's legacy SSE one — a body that holds no message
// over limit, and refuses the call such a message answers), and, outermost,
// the cut of the handshake's requests at its deadline (cut.go).
func (s *server) httpClient(at *attempt, limit int) *http.Client {
	var rt http.RoundTripper = s.httpT
	if s.inst.env.HTTPTransport != nil {
		rt = s.inst.env.HTTPTransport
	}
	if s.strat != nil {
		rt = s.strat.Wrap(rt)
	}
	if s.headers != nil { // outside: the strategy sets its headers last, and so wins
		rt = s.headers.Wrap(rt)
	}
	rt = tracingTransport{next: rt}
	at.status = &statusWatch{next: rt}
	// The cut is outermost: what it answers for a cut handshake is not
	// the server's.
	return &http.Client{Transport: cutTransport{next: bodylimit.Transport(at.status, limit), h: at.cut}, CheckRedirect: sameOrigin}
}

// sameOrigin refuses a redirect to another origin: the strategy would add
// the server's credentials to a request for someone else.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	from := via[0].URL
	if req.URL.Scheme != from.Scheme || req.URL.Host != from.Host {
		return &crossOrigin{scheme: req.URL.Scheme, host: req.URL.Host}
	}
	return nil
}

// crossOrigin is a redirect to another origin, refused.
type crossOrigin struct{ scheme, host string }

func (c *crossOrigin) Error() string {
	return fmt.Sprintf("refused a redirect to another origin (%s://%s)", c.scheme, c.host)
}

// connect opens a new session. On success it becomes the server's session
// and a watcher notices when it ends; the server is ready only once its
// tools are listed over it (refresh).
func (s *server) connect(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return errClosed
	}
	if s.attempt != nil { // share the attempt in flight
		ch := s.attempt
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		return s.connectedErr()
	}
	ch := make(chan struct{})
	s.attempt = ch // the state stays as it is (connecting at first, down after a failure) until this ends
	s.mu.Unlock()

	sess, cmd, at, err := s.dial(ctx)

	s.mu.Lock()
	s.attempt = nil
	close(ch)
	if s.closing {
		s.mu.Unlock()
		closeSession(sess, cmd)
		return errClosed
	}
	if err != nil {
		s.setDown(err, errors.Unwrap(err))
		s.mu.Unlock()
		return err
	}
	old, oldCmd := s.sess, s.cmd
	s.sess, s.cmd, s.statuses, s.wire = sess, cmd, at.status, at.wire
	s.wg.Add(1)
	s.mu.Unlock()
	closeSession(old, oldCmd)
	if at.status != nil {
		at.status.onLost(func(err error) { s.broken(sess, err) })
	}
	go s.watch(sess)
	return nil
}

// dial makes one connection attempt. Its error is coded and says why.
func (s *server) dial(ctx context.Context) (_ *mcp.ClientSession, _ *exec.Cmd, _ *attempt, err error) {
	ctx, span := s.startSpan(ctx, "connect")
	defer func() { endSpan(span, err) }()
	t, at := s.transport()
	var opts *mcp.ClientSessionOptions
	if v := s.spec.ProtocolVersion; v != "" && v != "auto" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: v}
	}
	var sess *mcp.ClientSession
	connect := func() { sess, err = s.client.Connect(ctx, t, opts) }
	if at.cut == nil {
		connect()
	} else if !at.cut.during(ctx, connect) && err == nil {
		// It succeeded only as its deadline passed, its requests cut.
		closeSession(sess, nil)
		sess, err = nil, context.Cause(ctx)
	}
	if err != nil {
		childproc.KillGroup(at.cmd)
		return nil, nil, at, s.connectError(ctx, err, at)
	}
	if wt, ok := t.(*wireTransport); ok {
		at.wire = wt.conn
	}
	return sess, at.cmd, at, nil
}

// connectedErr reports whether the server has a session, after a connect
// attempt it shared.
func (s *server) connectedErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.sess != nil:
		return nil
	case s.closing:
		return errClosed
	case s.downErr != nil:
		return s.downErr
	}
	return diag.Wrap(diag.MCPServerUnreachable, s.reason, "server %s is not connected", s.name)
}

// setState moves the server to st; since moves only when the state
// changes. s.mu is held.
func (s *server) setState(st driver.State) {
	if s.state != st {
		s.state, s.since = st, time.Now()
	}
}

// setReady records a server whose session is up and whose tools are
// listed. s.mu is held.
func (s *server) setReady() {
	s.setState(driver.StateReady)
	s.code, s.downErr, s.reason, s.shown = "", nil, nil, ""
}

// setDown records a server that is not ready: err is the coded error that
// says why, reason the transport's (logged at DEBUG only). s.mu is held.
func (s *server) setDown(err, reason error) {
	s.setState(driver.StateDown)
	s.code, s.downErr, s.reason = diag.CodeOf(err), err, reason
	s.shown = driver.Reason(err, s.name, s.hide...) // once here, not at every probe
}

// wake asks the supervisor for an attempt now, unless start-up or the
// supervisor's own attempt is what found the server down: they report the
// outcome themselves, and an attempt's error paces the next one, so that a
// server that fails every attempt the same way is retried with backoff,
// not in a tight loop.
func (s *server) wake() {
	s.mu.Lock()
	quiet := s.opening || s.recovering
	s.mu.Unlock()
	if !quiet {
		s.sup.Wake()
	}
}

var errClosed = errors.New("runtime closed")

// watch waits for a session to end; if it was the current one and the
// server is not closing, the server is down and the supervisor reconnects.
func (s *server) watch(sess *mcp.ClientSession) {
	defer s.wg.Done()
	err := sess.Wait()
	s.broken(sess, err)
}

// broken marks sess as dead, once, and wakes the supervisor: the server is
// down from now on, whatever the transport would still retry.
func (s *server) broken(sess *mcp.ClientSession, err error) {
	s.mu.Lock()
	if s.closing || s.sess != sess || sess == nil {
		s.mu.Unlock()
		return
	}
	cmd := s.cmd
	s.sess, s.cmd, s.statuses, s.wire = nil, nil, nil, nil
	s.setDown(diag.Wrap(diag.MCPServerUnreachable, err, "server %s lost its connection; reconnecting", s.name), err)
	s.mu.Unlock()
	s.log.Warn("server connection lost", "server", s.name, "code", diag.MCPServerUnreachable)
	s.log.Debug("server connection lost", "server", s.name, "reason", errString(err))
	go closeSession(sess, cmd)
	s.wake()
}

// reconnect is one attempt of the supervisor to make the server ready,
// bounded by the start-up budget: a new session when it has none, then a
// listing of its tools (they may have changed while it was away, or could
// not be listed before). It returns nil at once when the server is ready,
// and otherwise the coded error of why it is still not; a server lost
// again during the attempt is reported, so that the loop goes on.
func (s *server) reconnect(ctx context.Context) (err error) {
	s.mu.Lock()
	if s.closing || s.state == driver.StateReady {
		s.mu.Unlock()
		return nil
	}
	s.recovering = true
	s.mu.Unlock()
	ctx, span := s.startSpan(ctx, "reconnect")
	defer func() {
		s.mu.Lock()
		s.recovering = false
		s.mu.Unlock()
		endSpan(span, err)
	}()
	actx, cancel := context.WithTimeout(ctx, s.inst.env.Budget)
	defer cancel()
	// A session kept from before (its server could not list its tools) may
	// have ended since, when the listing over it is what finds out: then
	// one new session, in the same attempt.
	for kept := s.connected(); ; kept = false {
		if !s.connected() {
			if err := s.connect(actx); err != nil {
				if errors.Is(err, errClosed) {
					return nil
				}
				s.log.Debug("reconnect failed", "server", s.name, "reason", errString(err))
				return err
			}
			s.log.Info("server reconnected", "server", s.name)
		}
		if _, _, err := s.refresh(actx, true); err != nil && actx.Err() != nil && ctx.Err() == nil {
			s.listTimedOut(err)
		}
		if kept && !s.connected() && actx.Err() == nil {
			continue
		}
		break
	}
	if err := s.readyErr(); err != nil {
		s.log.Debug("server still not ready", "server", s.name, "code", diag.CodeOf(err), "reason", errString(err))
		return err
	}
	if o := s.newest(); o != nil {
		o.reconnected(s)
	}
	return nil
}

// goneStatus is the 502 or 503 that sess was answered with just now (within
// a second), or 0: see classify.
func (s *server) goneStatus(sess *mcp.ClientSession) int {
	s.mu.Lock()
	w := s.statuses
	current := s.sess == sess
	s.mu.Unlock()
	if !current {
		return 0
	}
	return w.goneWithin(time.Second)
}

// connected reports a server with a session.
func (s *server) connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess != nil
}

// readyErr is nil for a ready (or closed) server, and otherwise the coded
// error of why it is not ready.
func (s *server) readyErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closing || s.state == driver.StateReady:
		return nil
	case s.downErr != nil:
		return s.downErr
	}
	return diag.New(diag.MCPServerUnreachable, "server %s is not connected", s.name)
}

// listTimedOut records a listing over the current session that did not
// finish within its deadline.
func (s *server) listTimedOut(err error) error {
	coded := diag.Wrap(diag.MCPListFailed, err, "server %s connected, but listing its tools did not finish in time", s.name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != nil && !s.closing {
		s.setDown(coded, err)
	}
	return coded
}

// session returns the live session of a ready server. A server that is not
// ready is re-checked first — its supervisor makes an attempt now, and the
// call waits briefly for it — so that a server that is back serves the
// call; one that is still down answers TOOL_UNAVAILABLE.
func (s *server) session(ctx context.Context) (*mcp.ClientSession, error) {
	if s.lazy {
		s.connectLazy(ctx)
	}
	if sess, err := s.readySession(); sess != nil || err != nil {
		return sess, err
	}
	event(ctx, "heddle.recheck", attribute.String("heddle.server", s.name))
	s.recheck(ctx)
	if sess, err := s.readySession(); sess != nil || err != nil {
		return sess, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, s.unavailable()
}

// readySession returns the session of a ready server, nil while it is not
// ready, and an error once it is closed.
func (s *server) readySession() (*mcp.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closing:
		return nil, diag.New(diag.ToolUnavailable, "server %s is closed", s.name)
	case s.state == driver.StateReady && s.sess != nil:
		return s.sess, nil
	}
	return nil, nil
}

// recheck has the supervisor make an attempt now and waits for it: within
// ctx, at most driver.RecheckWait, and at most half of what is left of
// ctx, so that a call with a short deadline is refused rather than timed
// out. It reports whether the server is ready.
func (s *server) recheck(ctx context.Context) bool {
	wait := driver.RecheckWait
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d)/2)
	}
	rctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	_ = s.sup.Recheck(rctx)
	sess, _ := s.readySession()
	return sess != nil
}

// unavailable is the refusal of a call to a server that is not ready.
func (s *server) unavailable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.code == diag.ToolDefinitionChanged {
		return diag.Wrap(diag.ToolUnavailable, s.downErr, "server %s: its tools differ from heddle.lock (ai.pinning: strict)", s.name)
	}
	if s.code == diag.MCPListFailed {
		return diag.Wrap(diag.ToolUnavailable, s.downErr, "server %s cannot list its tools; trying again", s.name)
	}
	if s.shown != "" {
		return diag.Wrap(diag.ToolUnavailable, s.downErr, "server %s is unavailable (%s); reconnecting", s.name, s.shown)
	}
	return diag.Wrap(diag.ToolUnavailable, s.downErr, "server %s is unavailable; reconnecting", s.name)
}

// listTools fetches every page of the server's tools.
func listTools(ctx context.Context, sess *mcp.ClientSession) ([]*mcp.Tool, error) {
	return paginate(func(cursor string) ([]*mcp.Tool, string, error) {
		res, err := sess.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Tools, res.NextCursor, nil
	})
}

// errCursorRepeated is a listing that would never end.
var errCursorRepeated = errors.New("the server returned the cursor of an earlier page again")

// paginate follows nextCursor until a page has none. A repeated cursor is
// an error, so a looping server cannot hang start-up.
func paginate[T any](fetch func(cursor string) ([]T, string, error)) ([]T, error) {
	var out []T
	seen := map[string]bool{}
	cursor := ""
	for {
		items, next, err := fetch(cursor)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if next == "" {
			return out, nil
		}
		if seen[next] {
			return nil, errCursorRepeated
		}
		seen[next] = true
		cursor = next
	}
}

// markStale has the server's tools re-listed before their next use, and
// tells every toolset to look.
func (s *server) markStale() {
	s.stale.Store(true)
	for _, o := range s.owning() {
		o.env.Events.Stale(s.name)
	}
}

// refresh returns the server's tools and their generation, listing them
// first when they are stale (a list_changed arrived) or were never listed,
// or when force is set. Concurrent callers share one listing.
//
// A server that is not ready is listed only when forced (by start-up and
// by its supervisor): other callers get its last good list, which keeps
// the toolsets' names stable while it is away, or the error of why it is
// down, and wake its supervisor. A listing that fails over a live session
// makes the server down with MCP_LIST_FAILED: it is treated as a server
// that cannot be reached until a listing succeeds.
func (s *server) refresh(ctx context.Context, force bool) ([]*mcp.Tool, uint64, error) {
	for {
		s.mu.Lock()
		listed := !s.listedAt.IsZero() || s.lazy   // a lazy server has its tools from the lock
		if !force && s.state == driver.StateIdle { // offered from the lock; the first call connects it
			tools, gen := s.tools, s.gen
			s.mu.Unlock()
			return tools, gen, nil
		}
		if !force && s.state != driver.StateReady {
			tools, gen := s.tools, s.gen
			s.mu.Unlock()
			s.wake()
			if listed {
				return tools, gen, nil
			}
			// Never listed: down since start-up. The same code as a server
			// that dropped later, its reason wrapped.
			return nil, 0, s.unavailable()
		}
		if !force && !s.stale.Load() && listed {
			tools, gen := s.tools, s.gen
			s.mu.Unlock()
			return tools, gen, nil
		}
		if ch := s.listing; ch != nil {
			s.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			}
			force = false
			continue
		}
		ch := make(chan struct{})
		s.listing = ch
		sess := s.sess
		s.mu.Unlock()

		s.stale.Store(false) // a list_changed arriving from here on re-lists again
		tools, err := s.list(ctx, sess)
		if err == nil {
			s.screen(tools)
			err = s.checkPins(tools)
		}

		s.mu.Lock()
		s.listing = nil
		close(ch)
		current := sess != nil && s.sess == sess && !s.closing
		if err != nil {
			s.stale.Store(true)
			lost := current && ctx.Err() == nil && s.state == driver.StateReady
			if current && ctx.Err() == nil {
				s.setDown(err, errors.Unwrap(err))
			}
			cached, gen := s.tools, s.gen
			s.mu.Unlock()
			if lost {
				s.log.Warn("server cannot list its tools", "server", s.name, "code", diag.CodeOf(err), "error", err.Error())
				s.log.Debug("server cannot list its tools", "server", s.name, "reason", diag.Reason(err))
			}
			if current && ctx.Err() == nil {
				s.wake()
			}
			if listed && !force {
				return cached, gen, nil
			}
			return nil, 0, err
		}
		old := s.tools
		s.tools, s.listedAt = tools, time.Now()
		changed := !driver.SameTools(old, tools)
		if changed {
			s.gen++
		}
		if current {
			s.setReady()
		}
		gen := s.gen
		s.mu.Unlock()
		if changed {
			for _, o := range s.owning() {
				o.env.Events.Changed(s.name, old, tools)
			}
		}
		return tools, gen, nil
	}
}

// list lists the server's tools over sess. It does not wait for a
// reconnect in flight: every toolset granting the server lists it, and one
// server's slow handshake must not hold up the tools of the others. Its
// error is MCP_LIST_FAILED, or the context's.
func (s *server) list(ctx context.Context, sess *mcp.ClientSession) ([]*mcp.Tool, error) {
	if sess == nil {
		return nil, diag.New(diag.ToolUnavailable, "server %s is unavailable; reconnecting", s.name)
	}
	tools, err := listTools(ctx, sess)
	if err == nil {
		return tools, nil
	}
	if ctx.Err() != nil {
		return nil, err
	}
	if errors.Is(err, errCursorRepeated) { // the session is fine; the listing is not
		return nil, diag.Wrap(diag.MCPListFailed, err, "server %s connected, but tools/list failed: %s", s.name, errCursorRepeated)
	}
	if isBroken(err) {
		s.broken(sess, err)
		return nil, diag.Wrap(diag.MCPListFailed, err, "server %s lost its connection while listing its tools", s.name)
	}
	why := rpcReason(err)
	if why == "" {
		why, _ = netReason(err, s.host())
	}
	if why == "" {
		return nil, diag.Wrap(diag.MCPListFailed, err, "server %s connected, but tools/list failed", s.name)
	}
	return nil, diag.Wrap(diag.MCPListFailed, err, "server %s connected, but tools/list failed: %s", s.name, why)
}

// Error classes of a failed request.
type failClass int

const (
	failCtx         failClass = iota // the caller's context ended
	failNotSent                      // the request cannot have reached the server
	failUnreachable                  // the server cannot be reached: refused, DNS, TLS, a dial timeout
	failBroken                       // the connection broke (EOF, reset); the request may have run
	failGone                         // answered 502 or 503: the server cannot be reached behind its address; it may have run
	failTransient                    // an HTTP error status the server itself answered; the session survives
	failProtocol                     // the server answered with a JSON-RPC error
)

// classify sorts an error of a session call, in the order the SDK's
// behaviour makes reliable; status is a 502 or 503 the session was answered
// with just now, or 0. go-sdk wraps a failure of the HTTP client in
// jsonrpc2.ErrRejected (code -32005) whatever it was, so a request that
// could not even be dialed, or whose connection was reset, is told apart by
// its cause before that code.
//
// A 502 Bad Gateway or 503 Service Unavailable says that the server cannot
// be reached behind whatever answered (or that it cannot serve at all): it
// is a connection failure. Any other status is the server's own answer —
// a 500 may be one tool's failure, a 504 a slow tool behind a proxy — and
// leaves it up.
func classify(ctx context.Context, err error, status int) failClass {
	var rpcErr *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		return failCtx
	case errors.Is(err, mcp.ErrSessionMissing), errors.Is(err, mcp.ErrConnectionClosed):
		return failNotSent
	case dialFailed(err):
		return failUnreachable
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return failBroken
	case errors.As(err, &rpcErr) && rpcErr.Code == codeRejected && (status == http.StatusBadGateway || status == http.StatusServiceUnavailable):
		return failGone
	case errors.As(err, &rpcErr) && rpcErr.Code == codeRejected:
		return failTransient
	case errors.As(err, &rpcErr) && rpcErr.Code != codeClientClosing && rpcErr.Code != codeServerClosing:
		return failProtocol
	}
	return failBroken
}

// isBroken reports an error of a request whose connection, not the request
// itself, failed.
func isBroken(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false // the caller gave up; the session is fine
	}
	f := classify(context.Background(), err, 0)
	return f == failNotSent || f == failUnreachable || f == failBroken || f == failGone
}

// dialFailed reports an error of a request that never left this worker
// because the server could not be reached.
func dialFailed(err error) bool {
	_, dialed := netReason(err, "")
	return dialed
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// serverStatus is a server's state for health reports.
type serverStatus struct {
	state    driver.State
	code     diag.Code
	reason   string // driver.Reason of downErr
	tools    int
	listedAt time.Time
	since    time.Time
}

// status returns the server's state for health reports.
func (s *server) status() serverStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return serverStatus{state: s.state, code: s.code, reason: s.shown,
		tools: len(s.tools), listedAt: s.listedAt, since: s.since}
}
