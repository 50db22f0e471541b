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
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/internal/bodylimit"
	"github.com/heddlehq/heddle/internal/childproc"
	"github.com/heddlehq/heddle/internal/mcpstdio"
	"github.com/heddlehq/heddle/internal/resultcap"
	"github.com/heddlehq/heddle/internal/sseconn"
	"github.com/heddlehq/heddle/runtime"
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
	env    []string // resolved child environment (stdio)
	httpT  *http.Transport
	stderr *childproc.StderrLog

	stale atomic.Bool // a list_changed arrived; re-list before the next use

	mu        sync.Mutex
	sess      *mcp.ClientSession
	cmd       *exec.Cmd
	state     runtime.State
	code      diag.Code     // why the server is down
	reason    error         // the transport's reason (debug only)
	connErr   error         // the coded error of the last failed connection attempt
	attempt   chan struct{} // non-nil while a connection attempt runs
	attempts  uint64        // connection attempts ended
	tools     []*mcp.Tool
	gen       uint64 // bumped whenever tools change
	listedAt  time.Time
	listing   chan struct{} // non-nil while a re-list runs
	closing   bool
	sup       *runtime.Supervisor // reconnects the server while it is down
	refs      int
	wg        sync.WaitGroup
	downSince time.Time
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
		s.state = runtime.StateClosed
	}
	if !last {
		s.mu.Unlock()
		return
	}
	sess, cmd, attempt := s.sess, s.cmd, s.attempt
	s.sess, s.cmd = nil, nil
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
	at := &attempt{}
	if s.inst.env.Dial != nil {
		return s.inst.env.Dial(s.name), at
	}
	limit := resultcap.HardLimit(s.spec.MaxResultBytes) // a larger message is refused as it is read
	switch s.spec.Transport {
	case "stdio":
		at.mark = s.stderr.Mark()
		at.cmd = childproc.Command(s.spec.Command, s.spec.Args, s.env, s.spec.Dir, s.stderr)
		at.stdio = &keepConn{Transport: mcpstdio.NewTransport(at.cmd, &mcpstdio.Options{Terminate: 2 * time.Second, MaxMessageBytes: limit})}
		return at.stdio, at
	case "sse":
		return sseconn.NewTransport(&mcp.SSEClientTransport{Endpoint: s.spec.URL, HTTPClient: s.httpClient(at, limit), MaxEventSize: bodylimit.EventSize(limit)}), at
	}
	t := &mcp.StreamableClientTransport{Endpoint: s.spec.URL, HTTPClient: s.httpClient(at, limit), MaxRetries: 3, MaxEventSize: bodylimit.EventSize(limit)}
	if o, ok := s.strat.(authlive.OAuthStrategy); ok {
		t.OAuthHandler = o.OAuthHandler() // go-sdk sets the token; on 401/403 one Authorize, one retry
	}
	return t, at
}

// httpClient is the HTTP client of one connection attempt: the server's
// transport, its strategy's credentials, a watch on the statuses it
// answers, and, outermost, the bound of what go-sdk reads of each answer
// (bodylimit: go-sdk's clients read a body whole; the bound hands them one
// that holds no message over limit, and refuses the call such a message
// answers).
func (s *server) httpClient(at *attempt, limit int) *http.Client {
	var rt http.RoundTripper = s.httpT
	if s.inst.env.HTTPTransport != nil {
		rt = s.inst.env.HTTPTransport
	}
	if s.strat != nil {
		rt = s.strat.Wrap(rt)
	}
	at.status = &statusWatch{next: rt}
	return &http.Client{Transport: bodylimit.Transport(at.status, limit), CheckRedirect: sameOrigin}
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
// and a watcher notices when it ends.
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
		return s.readyErr()
	}
	ch := make(chan struct{})
	s.attempt = ch // the state stays as it is (connecting at first, down after a failure) until this ends
	s.mu.Unlock()

	sess, cmd, err := s.dial(ctx)

	s.mu.Lock()
	s.attempt = nil
	s.attempts++
	close(ch)
	if s.closing {
		s.mu.Unlock()
		closeSession(sess, cmd)
		return errClosed
	}
	if err != nil {
		s.state, s.code, s.reason, s.connErr = runtime.StateDown, diag.CodeOf(err), errors.Unwrap(err), err
		if s.downSince.IsZero() {
			s.downSince = time.Now()
		}
		s.mu.Unlock()
		return err
	}
	old, oldCmd := s.sess, s.cmd
	s.sess, s.cmd = sess, cmd
	s.state, s.code, s.reason, s.connErr, s.downSince = runtime.StateReady, "", nil, nil, time.Time{}
	s.wg.Add(1)
	s.mu.Unlock()
	closeSession(old, oldCmd)
	go s.watch(sess)
	return nil
}

// dial makes one connection attempt. Its error is coded and says why.
func (s *server) dial(ctx context.Context) (*mcp.ClientSession, *exec.Cmd, error) {
	t, at := s.transport()
	var opts *mcp.ClientSessionOptions
	if v := s.spec.ProtocolVersion; v != "" && v != "auto" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: v}
	}
	sess, err := s.client.Connect(ctx, t, opts)
	if err != nil {
		childproc.KillGroup(at.cmd)
		return nil, nil, s.connectError(ctx, err, at)
	}
	return sess, at.cmd, nil
}

func (s *server) readyErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == runtime.StateReady {
		return nil
	}
	if s.closing {
		return errClosed
	}
	if s.connErr != nil {
		return s.connErr
	}
	return diag.Wrap(diag.MCPServerUnreachable, s.reason, "server %s is not connected", s.name)
}

var errClosed = errors.New("runtime closed")

// watch waits for a session to end; if it was the current one and the
// server is not closing, the server is down and the supervisor reconnects.
func (s *server) watch(sess *mcp.ClientSession) {
	defer s.wg.Done()
	err := sess.Wait()
	s.broken(sess, err)
}

// broken marks sess as dead, once, and starts the reconnect loop.
func (s *server) broken(sess *mcp.ClientSession, err error) {
	s.mu.Lock()
	if s.closing || s.sess != sess || sess == nil {
		s.mu.Unlock()
		return
	}
	cmd := s.cmd
	s.sess, s.cmd = nil, nil
	s.state, s.code, s.reason, s.downSince = runtime.StateDown, diag.ToolUnavailable, err, time.Now()
	s.mu.Unlock()
	s.log.Warn("server connection lost", "server", s.name, "code", diag.ToolUnavailable)
	s.log.Debug("server connection lost", "server", s.name, "reason", errString(err))
	go closeSession(sess, cmd)
	s.superviseSoon()
}

// superviseSoon wakes the server's supervisor (Supervisor: capped, jittered
// backoff, single-flight; the first attempt at once, and a caller that finds
// the server down gets the next one now).
func (s *server) superviseSoon() { s.sup.Wake() }

// reconnect is one attempt of the supervisor, bounded by the start-up
// budget. After it the server's tools are listed again (they may have
// changed while it was away) and watchers told.
func (s *server) reconnect(ctx context.Context) error {
	s.mu.Lock()
	done := s.sess != nil || s.closing
	s.mu.Unlock()
	if done {
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, s.inst.env.Budget)
	defer cancel()
	err := s.connect(actx)
	switch {
	case err == nil:
		s.log.Info("server reconnected", "server", s.name)
		s.markStale()
		s.inst.reconnected(s)
		return nil
	case errors.Is(err, errClosed):
		return nil
	}
	s.log.Debug("reconnect failed", "server", s.name, "reason", errString(err))
	return err
}

// session returns the live session, waiting for a connect attempt in flight
// (bounded by ctx). A server that is down answers TOOL_UNAVAILABLE.
func (s *server) session(ctx context.Context) (*mcp.ClientSession, error) {
	s.mu.Lock()
	sess, attempt, closing := s.sess, s.attempt, s.closing
	s.mu.Unlock()
	if sess != nil {
		return sess, nil
	}
	if closing {
		return nil, diag.New(diag.ToolUnavailable, "server %s is closed", s.name)
	}
	if attempt != nil {
		select {
		case <-attempt:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s.mu.Lock()
		sess = s.sess
		s.mu.Unlock()
		if sess != nil {
			return sess, nil
		}
	}
	s.superviseSoon()
	return nil, diag.New(diag.ToolUnavailable, "server %s is unavailable; reconnecting", s.name)
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
			return nil, fmt.Errorf("the server returned the cursor of an earlier page again")
		}
		seen[next] = true
		cursor = next
	}
}

// markStale has the server's tools re-listed before their next use, and
// tells every toolset to look.
func (s *server) markStale() {
	s.stale.Store(true)
	s.inst.env.Events.Stale(s.name)
}

// refresh re-lists the server's tools when they are stale (or never
// listed). Concurrent callers share one listing. It returns the tools and
// their generation.
func (s *server) refresh(ctx context.Context, force bool) ([]*mcp.Tool, uint64, error) {
	for {
		s.mu.Lock()
		if !force && !s.stale.Load() && !s.listedAt.IsZero() {
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
		s.mu.Unlock()

		s.stale.Store(false) // a list_changed arriving from here on re-lists again
		tools, err := s.list(ctx)

		s.mu.Lock()
		s.listing = nil
		close(ch)
		if err != nil {
			s.markStale()
			cached, gen := s.tools, s.gen
			listed := !s.listedAt.IsZero()
			s.mu.Unlock()
			if listed { // keep serving the last good list
				s.log.Debug("re-listing tools failed", "server", s.name, "reason", errString(err))
				return cached, gen, nil
			}
			return nil, 0, err
		}
		old := s.tools
		s.tools, s.listedAt = tools, time.Now()
		changed := !runtime.SameTools(old, tools)
		if changed {
			s.gen++
		}
		gen := s.gen
		s.mu.Unlock()
		if changed {
			s.inst.env.Events.Changed(s.name, old, tools)
		}
		return tools, gen, nil
	}
}

// list lists the server's tools over its live session. It does not wait for
// a reconnect in flight: every toolset granting the server lists it, and one
// server's slow handshake must not hold up the tools of the others (its own
// tools answer TOOL_UNAVAILABLE meanwhile, or keep their last good listing).
func (s *server) list(ctx context.Context) ([]*mcp.Tool, error) {
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess == nil {
		s.superviseSoon()
		return nil, diag.New(diag.ToolUnavailable, "server %s is unavailable; reconnecting", s.name)
	}
	tools, err := listTools(ctx, sess)
	if err == nil {
		return tools, nil
	}
	if isBroken(err) {
		s.broken(sess, err)
	}
	if ctx.Err() != nil {
		return nil, err
	}
	why := rpcReason(err)
	if why == "" {
		why, _ = netReason(err, s.host())
	}
	if why == "" {
		return nil, diag.Wrap(diag.MCPServerUnreachable, err, "server %s: tools/list failed", s.name)
	}
	return nil, diag.Wrap(diag.MCPServerUnreachable, err, "server %s: tools/list failed: %s", s.name, why)
}

// Error classes of a failed request.
type failure int

const (
	failCtx         failure = iota // the caller's context ended
	failNotSent                    // the request cannot have reached the server
	failUnreachable                // the server cannot be reached: refused, DNS, TLS, a dial timeout
	failBroken                     // the connection broke; the request may have run
	failTransient                  // an HTTP error status or a network failure past the dial; the session survives
	failProtocol                   // the server answered with a JSON-RPC error
)

// classify sorts an error of a session call, in the order the SDK's
// behaviour makes reliable. go-sdk wraps a failure of the HTTP client in
// jsonrpc2.ErrRejected (code -32005) whatever it was, so a request that
// could not even be dialed is told apart by its cause before that code.
func classify(ctx context.Context, err error) failure {
	var rpcErr *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		return failCtx
	case errors.Is(err, mcp.ErrSessionMissing), errors.Is(err, mcp.ErrConnectionClosed):
		return failNotSent
	case dialFailed(err):
		return failUnreachable
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return failBroken
	case errors.As(err, &rpcErr) && rpcErr.Code == -32005:
		return failTransient
	case errors.As(err, &rpcErr) && rpcErr.Code != -32003 && rpcErr.Code != -32004:
		return failProtocol
	}
	return failBroken
}

func isBroken(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false // the caller gave up; the session is fine
	}
	f := classify(context.Background(), err)
	return f == failNotSent || f == failUnreachable || f == failBroken
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

// status returns the server's state for health reports.
func (s *server) status() (runtime.State, diag.Code, int, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.code, len(s.tools), s.listedAt
}

// waitReady waits until the server has a session again, for at most one
// connection attempt: a call that cannot have reached the server is sent
// again when a reconnect succeeds at once, and answered when it fails,
// rather than held until its deadline while the server stays down. ctx
// bounds the wait.
func (s *server) waitReady(ctx context.Context) error {
	s.mu.Lock()
	since := s.attempts
	s.mu.Unlock()
	for {
		s.mu.Lock()
		sess, closing, attempt, ended, connErr := s.sess, s.closing, s.attempt, s.attempts != since, s.connErr
		s.mu.Unlock()
		switch {
		case sess != nil:
			return nil
		case closing:
			return errClosed
		case ended && connErr != nil:
			return connErr
		case ended:
			return diag.New(diag.MCPServerUnreachable, "server %s is not connected", s.name)
		}
		if attempt == nil {
			s.superviseSoon()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		select {
		case <-attempt:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
