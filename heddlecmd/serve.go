package heddlecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/serve"
)

// DefaultListen is serve's default address.
const DefaultListen = "127.0.0.1:8080"

// drainTimeout bounds how long serve waits for in-flight requests on
// SIGINT/SIGTERM.
const drainTimeout = 30 * time.Second

func (e *env) serve(args []string) int {
	var (
		rf     runFlags
		listen string
	)
	if _, err := e.parseCommand("serve", args, 0, 0, func(fs *flag.FlagSet) {
		rf.register(fs)
		fs.StringVar(&listen, "listen", DefaultListen, "address to listen on")
	}); err != nil {
		return e.usageError(err)
	}
	log, err := rf.logger(e)
	if err != nil {
		return e.usageError(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := metrics.New()
	e.onCall = m.Observe
	rt, code := e.open(ctx, &rf, log, false)
	if rt == nil {
		return code
	}
	defer rt.Close()

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		e.printFailure(listenError(listen, err))
		return ExitFail
	}
	front, err := serve.New(ctx, rt, &serve.Options{Addr: ln.Addr(), Metrics: m, Logger: log})
	if err != nil {
		ln.Close()
		e.printFailure(err)
		return ExitFail
	}
	fmt.Fprintf(e.stdout, "heddle: serving on http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- front.Serve(ln) }()
	select {
	case err := <-errc:
		e.printFailure(diag.Wrap(diag.ListenFailed, err, "serving on %s stopped: %v", ln.Addr(), err))
		return ExitFail
	case <-ctx.Done():
	}
	log.Info("draining")
	dctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := front.Shutdown(dctx); err != nil {
		fmt.Fprintf(e.stderr, "heddle: drain: %v\n", err)
	}
	return ExitOK
}

// listenError is the LISTEN_FAILED error of a --listen address serve cannot
// listen on, saying why in words (an address is not a secret).
func listenError(addr string, err error) error {
	var (
		addrErr *net.AddrError
		dnsErr  *net.DNSError
		why     string
	)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		why = "another process listens there"
	case errors.Is(err, syscall.EACCES):
		why = "permission denied (a port below 1024 needs privileges)"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		why = "its host is not an address of this machine"
	case errors.As(err, &dnsErr):
		why = "its host name does not resolve"
	case errors.As(err, &addrErr):
		why = fmt.Sprintf("it is not HOST:PORT (%s)", addrErr.Err)
	default:
		why = "listening failed"
	}
	return diag.Wrap(diag.ListenFailed, err, "cannot listen on --listen %s: %s", addr, why)
}
