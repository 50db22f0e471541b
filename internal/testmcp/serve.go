package testmcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTP paths [Handler] serves.
const (
	// StreamablePath serves Streamable HTTP.
	StreamablePath = "/mcp"
	// SSEPath serves the legacy HTTP+SSE transport (2024-11-05).
	SSEPath = "/sse"
)

// GarbageLine is the line [Options.GarbageOnStdout] writes before serving.
const GarbageLine = "heddle-testmcp: this line is not JSON-RPC"

// ListeningPrefix starts the one line [ListenAndServe] prints on stdout, followed
// by the server's base URL: "listening on http://127.0.0.1:PORT".
const ListeningPrefix = "listening on "

// ServeStdio serves one session over stdin and stdout until the client closes
// stdin or ctx is done. It is meant for a process's main function: stdout is
// the protocol channel, so nothing else may write to it, and
// [Options.CrashAfter] exits the process with status 3.
func ServeStdio(ctx context.Context, opts *Options) error {
	exitAtStart(opts)
	s := newServer(opts, os.Exit)
	if s.opts.GarbageOnStdout {
		if _, err := fmt.Fprintln(os.Stdout, GarbageLine); err != nil {
			return err
		}
	}
	if s.rewrites() {
		return s.srv.Run(ctx, &mcp.IOTransport{Reader: os.Stdin, Writer: s.stdioWriter(os.Stdout)})
	}
	return s.srv.Run(ctx, &mcp.StdioTransport{})
}

// Handler returns an HTTP handler serving one in-process server (see
// [NewServer]) at two paths: Streamable HTTP at /mcp (stateless when
// [Options.Stateless] is set, answering with JSON bodies when
// [Options.JSONResponse] is) and legacy SSE at /sse. Sessions of both share
// the server, so a tool added by add_tool on one is seen by all.
//
// DNS-rebinding protection is off: the handler is a test fixture, and tests
// may reach it through a Host header other than 127.0.0.1.
func Handler(opts *Options) http.Handler {
	return newServer(opts, nil).handler()
}

func (s *server) handler() http.Handler {
	get := func(*http.Request) *mcp.Server { return s.srv }
	mux := http.NewServeMux()
	var streamable http.Handler = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Stateless:                    s.opts.Stateless,
		JSONResponse:                 s.opts.JSONResponse,
		DisableLocalhostProtection:   true,
		PropagateRequestCancellation: true,
		Logger:                       s.log,
	})
	if s.opts.HoldStream {
		streamable = holdGET(streamable)
	}
	mux.Handle(StreamablePath, streamable)
	mux.Handle(SSEPath, mcp.NewSSEHandler(get, &mcp.SSEOptions{DisableLocalhostProtection: true}))
	if s.rewrites() {
		return s.reshaping(mux)
	}
	return mux
}

// holdGET holds every GET until its request ends (the client gives up, or
// the server shuts down), answering nothing, and passes the rest to h.
func holdGET(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			<-r.Context().Done()
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ListenAndServe serves [Handler]'s endpoints on addr until ctx is done, then
// shuts down (giving open requests one second) and returns nil. The host of
// addr must be 127.0.0.1 or localhost (an empty host means 127.0.0.1); any
// other host is refused, since this server has no authentication. Port 0
// picks a free port: once listening, ListenAndServe prints one line on
// stdout, "listening on http://127.0.0.1:PORT", for a parent process to read.
//
// Like [ServeStdio] it is meant for a process's main function:
// [Options.CrashAfter] exits the process with status 3.
func ListenAndServe(ctx context.Context, addr string, opts *Options) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("testmcp: listen address %q: %w", addr, err)
	}
	switch host {
	case "", "localhost", "127.0.0.1":
	default:
		return fmt.Errorf("testmcp: refusing to listen on %q: only 127.0.0.1 is allowed", host)
	}
	exitAtStart(opts)
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return fmt.Errorf("testmcp: %w", err)
	}
	s := newServer(opts, os.Exit)
	hs := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	if _, err := fmt.Fprintf(os.Stdout, "%shttp://%s\n", ListeningPrefix, ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	s.log.Info("listening", "addr", ln.Addr().String())

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Long-lived streams (SSE, standalone GETs) never go idle, so Shutdown
	// gets a short grace and Close ends the rest.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		hs.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// exitAtStart ends the process under [Options.ExitAtStart].
func exitAtStart(opts *Options) {
	if opts != nil && opts.ExitAtStart {
		fmt.Fprintln(os.Stderr, "heddle-testmcp: exiting at start (--exit-at-start)")
		os.Exit(1)
	}
}
