package testmcp

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is the implementation version the test server reports.
const Version = "0.1.0"

// CrashExitStatus is the status a test server process exits with when
// [Options.CrashAfter] is reached.
const CrashExitStatus = 3

// stormTool is the dummy tool a list_changed storm adds and removes.
const stormTool = "storm_tool"

// Method names the handshake middleware watches.
const (
	methodInitialize = "initialize"
	methodDiscover   = "server/discover"
	methodCallTool   = "tools/call"
	methodListTools  = "tools/list"
)

// server is the state behind one *mcp.Server: its options, the tool-call
// counter for CrashAfter and the storm timer.
type server struct {
	opts Options
	srv  *mcp.Server
	log  *slog.Logger
	// exit ends the process with a status; nil for in-process servers, which
	// close the calling session instead.
	exit func(code int)

	calls atomic.Int64
	lists atomic.Int64 // tools/list requests, for FailListAfter

	stormMu    sync.Mutex
	stormArmed bool // a storm timer is pending
	stormOn    bool // storm_tool is currently present
}

// NewServer returns an MCP server configured by opts (nil means defaults),
// for use in process: connect it to an in-memory transport, or serve it from
// your own HTTP handler. Each call returns an independent server.
//
// [Options.CrashAfter] closes the calling session rather than exiting, since
// the process is the caller's. The returned server is safe for concurrent
// sessions, like any *mcp.Server.
func NewServer(opts *Options) *mcp.Server {
	return newServer(opts, nil).srv
}

func newServer(opts *Options, exit func(int)) *server {
	s := &server{exit: exit}
	if opts != nil {
		s.opts = *opts
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: s.opts.name(), Version: Version}, &mcp.ServerOptions{
		PageSize: s.opts.PageSize,
		Logger:   s.log,
		// Advertise tools (with listChanged) even with no tools at all, so
		// that add_tool and the storm always reach clients.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	s.srv.AddReceivingMiddleware(s.middleware)
	if !s.opts.NoFixedTools {
		s.addFixedTools()
	}
	for _, name := range s.opts.Tools {
		s.addEchoTool(name)
	}
	if s.opts.TraceTool {
		addTool(s, &mcp.Tool{Name: TraceToolName, Description: "Returns the W3C trace context the call carried, in params._meta and in HTTP headers."}, traceContext)
	}
	if s.opts.BadNames {
		for _, name := range BadNames {
			s.addEchoTool(name)
		}
	}
	for i := range s.opts.NumTools {
		s.addEchoTool(fmt.Sprintf("tool_%03d", i))
	}
	if s.opts.AnnotationShapes {
		s.addShapeTools()
	}
	return s
}

// middleware implements the behaviour that is not one tool's: handshake
// delays and hangs, CrashAfter, HangOnCall, and arming the storm.
func (s *server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		s.armStorm()
		switch method {
		case methodInitialize, methodDiscover:
			if s.opts.HangHandshake {
				s.log.Info("hanging handshake", "method", method)
				<-ctx.Done()
				return nil, ctx.Err()
			}
			if err := sleep(ctx, s.opts.HandshakeDelay); err != nil {
				return nil, err
			}
		case methodListTools:
			if err := sleep(ctx, s.opts.ListDelay); err != nil {
				return nil, err
			}
			if err := s.listFault(); err != nil {
				return nil, err
			}
			if s.opts.CrashOnList {
				return s.crash(req, 0)
			}
			if s.opts.RepeatCursor {
				if r, ok := req.(*mcp.ListToolsRequest); ok && r.Params != nil {
					r.Params.Cursor = "" // every page is the first
				}
				res, err := next(ctx, method, req)
				if r, ok := res.(*mcp.ListToolsResult); ok {
					r.NextCursor = "again"
				}
				return res, err
			}
		case methodCallTool:
			n := s.calls.Add(1)
			if s.opts.CrashAfter > 0 && n > int64(s.opts.CrashAfter) {
				return s.crash(req, n)
			}
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && slices.Contains(s.opts.HangOnCall, p.Name) {
				s.log.Info("hanging tool call", "tool", p.Name)
				<-ctx.Done()
				return nil, ctx.Err()
			}
		}
		return next(ctx, method, req)
	}
}

// listFault is the error a tools/list request gets under FailList or
// FailListAfter, or nil.
func (s *server) listFault() error {
	n := s.lists.Add(1)
	if !s.opts.FailList && (s.opts.FailListAfter <= 0 || n <= int64(s.opts.FailListAfter)) {
		return nil
	}
	s.log.Warn("failing tools/list", "request", n)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "testmcp: listing tools failed"}
}

// crash ends the process, or, in process, fails the call and closes the
// calling session.
func (s *server) crash(req mcp.Request, n int64) (mcp.Result, error) {
	s.log.Warn("crashing", "crash_after", s.opts.CrashAfter, "call", n)
	if s.exit != nil {
		s.exit(CrashExitStatus)
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
		// Close waits for in-flight requests, this one included, so it
		// cannot run on this goroutine.
		go ss.Close()
	}
	return nil, &jsonrpc.Error{
		Code:    jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("testmcp: crashed after %d tool calls", s.opts.CrashAfter),
	}
}

// armStorm starts the list_changed storm timer if the storm is configured
// and no timer is pending. The storm stops by itself when no session is
// connected, and the next request starts it again; so a server nobody
// uses leaves no timer running.
func (s *server) armStorm() {
	if s.opts.ListChangedEvery <= 0 {
		return
	}
	s.stormMu.Lock()
	defer s.stormMu.Unlock()
	if !s.stormArmed {
		s.stormArmed = true
		time.AfterFunc(s.opts.ListChangedEvery, s.stormTick)
	}
}

func (s *server) stormTick() {
	s.stormMu.Lock()
	defer s.stormMu.Unlock()
	active := false
	for range s.srv.Sessions() {
		active = true
		break
	}
	if !active {
		s.stormArmed = false
		return
	}
	if s.stormOn {
		s.srv.RemoveTools(stormTool)
	} else {
		s.addEchoTool(stormTool)
	}
	s.stormOn = !s.stormOn
	time.AfterFunc(s.opts.ListChangedEvery, s.stormTick)
}

// annotate sets the tool's hints from Options.Destructive.
func (s *server) annotate(t *mcp.Tool) {
	destructive := false
	for _, glob := range s.opts.Destructive {
		if ok, _ := path.Match(glob, t.Name); ok {
			destructive = true
			break
		}
	}
	if destructive {
		t.Annotations = &mcp.ToolAnnotations{DestructiveHint: new(true)}
	} else {
		t.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
	}
}

// sleep waits for d or until ctx is done, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
