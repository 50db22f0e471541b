package heddlecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/serve"
)

// DefaultListen is serve's default address.
const DefaultListen = "127.0.0.1:8080"

// DefaultGrace is how long serve's drain waits for the calls in flight
// unless --grace says otherwise.
const DefaultGrace = 30 * time.Second

// serve runs the front door until SIGINT or SIGTERM, then drains it for
// --grace and closes the runtime. SIGHUP, and with --watch a change of a
// configuration file, reloads the configuration (reload.go). It exits 0 when every call in flight was
// answered, ExitFail when the drain was cut (at --grace, or by a second
// signal) with calls still running, which were answered SHUTTING_DOWN: the
// exit status tells a supervisor that callers saw a failure.
func (e *invocation) serve(args []string) int {
	var (
		rf     runFlags
		listen string
		grace  = graceFlag(DefaultGrace)
		watch  bool
	)
	if _, err := e.parseCommand("serve", args, 0, 0, func(fs *flag.FlagSet) {
		rf.register(fs)
		fs.StringVar(&listen, "listen", DefaultListen, "address to listen on")
		fs.Var(&grace, "grace", "how long a drain waits for the calls in flight before it cancels them (a Go duration: 30s, 2m, 1m30s)")
		fs.BoolVar(&watch, "watch", false, "reload when the configuration, an agent or the lock file changes (SIGHUP always reloads)")
	}); err != nil {
		return e.usageError(err)
	}
	log, err := rf.logger(e)
	if err != nil {
		return e.usageError(err)
	}
	sig := watchSignals()
	defer sig.stop()
	ctx := sig.first
	// SIGHUP is caught from now on: one during start-up reloads once it
	// is over, rather than end the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	m := metrics.New()
	e.onCall = m.Observe
	e.onMCP = func(op mcplive.Operation) {
		m.ObserveMCP(op.Method, op.Server, op.Transport, op.ErrorType, op.Duration)
	}
	e.onRateFallback = m.StateFallback
	e.onAuditLost = m.AuditLost
	// serve.state is opened before the runtime, whose rates it counts, and
	// closed after it.
	e.shareState = true
	defer func() { _ = e.state.Close() }()
	rt, code := e.open(ctx, &rf, log, false)
	if rt == nil {
		return code
	}
	gens := runtime.NewGenerations(rt)
	defer gens.Close()

	ln, pln, err := listenAll(listen, rt.Plan().Serve.Probes)
	if err != nil {
		e.printFailure(err)
		return ExitFail
	}
	opts := &serve.Options{Addr: ln.Addr(), Metrics: m, Logger: log, Generations: gens, State: e.state}
	if e.tracing != nil {
		opts.TracerProvider = e.tracing.provider()
	}
	front, err := serve.New(ctx, rt, opts)
	if err != nil {
		ln.Close()
		if pln != nil {
			pln.Close()
		}
		e.printFailure(err)
		return ExitFail
	}
	stopReloads := e.reloads(ctx, &rf, log, gens, m, hup, watch)
	defer stopReloads()
	fmt.Fprintf(e.stdout, "heddle: serving on http://%s\n", ln.Addr())
	errc := make(chan error, 2)
	go func() { errc <- front.Serve(ln) }()
	if pln != nil {
		fmt.Fprintf(e.stdout, "heddle: probes on http://%s\n", pln.Addr())
		go func() {
			if err := front.ServeProbes(pln); !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("serving the probes on %s: %w", pln.Addr(), err)
			}
		}()
	}
	select {
	case err := <-errc:
		e.printFailure(diag.Wrap(diag.ListenFailed, err, "serving on %s stopped: %v", ln.Addr(), err))
		return ExitFail
	case <-ctx.Done():
	}
	log.Info("draining", "grace", time.Duration(grace).String())
	dctx, cancel := context.WithTimeout(sig.second, time.Duration(grace))
	defer cancel()
	if err := front.Shutdown(dctx); err != nil {
		why := "--grace " + time.Duration(grace).String() + " passed"
		if sig.second.Err() != nil {
			why = "a second signal came"
		}
		fmt.Fprintf(e.stderr, "heddle: drain: %s: %v\n", why, err)
		return ExitFail
	}
	return ExitOK
}

// shutdownSignals are the contexts of serve's SIGINT and SIGTERM: first is
// done at the first of them (a drain begins), second at the next (the drain
// ends at once).
type shutdownSignals struct {
	first, second context.Context
	stop          func()
}

func watchSignals() shutdownSignals {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	first, cancelFirst := context.WithCancel(context.Background())
	second, cancelSecond := context.WithCancel(context.Background())
	quit := make(chan struct{})
	go func() {
		for n := 0; n < 2; n++ {
			select {
			case <-ch:
			case <-quit:
				return
			}
			if n == 0 {
				cancelFirst()
			} else {
				cancelSecond()
			}
		}
	}()
	return shutdownSignals{first: first, second: second, stop: func() {
		signal.Stop(ch)
		close(quit)
		cancelFirst()
		cancelSecond()
	}}
}

// graceFlag is the value of --grace: a Go duration, not negative.
type graceFlag time.Duration

func (g *graceFlag) String() string { return time.Duration(*g).String() }

func (g *graceFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return errors.New("want a Go duration, a number and a unit (ms, s, m, h): 30s, 90s, 2m, 1m30s")
	}
	*g = graceFlag(d)
	return nil
}

// listenAll listens on the --listen address and, when serve.probes is
// set, on serve.probes.listen; pln is nil without it. A failure is
// LISTEN_FAILED, naming the address, and leaves nothing open.
func listenAll(listen string, probes *plan.ServeProbes) (ln, pln net.Listener, err error) {
	ln, err = net.Listen("tcp", listen)
	if err != nil {
		return nil, nil, listenError("--listen", listen, err)
	}
	if probes == nil {
		return ln, nil, nil
	}
	pln, err = net.Listen("tcp", probes.Listen)
	if err != nil {
		ln.Close()
		return nil, nil, listenError("serve.probes.listen", probes.Listen, err)
	}
	return ln, pln, nil
}

// listenError is the LISTEN_FAILED error of an address serve cannot listen
// on (--listen, or the setting named by what), saying why in words (an
// address is not a secret).
func listenError(what, addr string, err error) error {
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
	return diag.Wrap(diag.ListenFailed, err, "cannot listen on %s %s: %s", what, addr, why)
}
