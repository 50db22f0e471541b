package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/auth/pluginsdk"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
)

// StartTimeout bounds one start of a plugin process: exec, handshake and
// the gRPC connection. A start runs on its own, so a caller whose deadline
// is shorter stops waiting without cutting it short for the others.
const StartTimeout = 10 * time.Second

// proc is one plugin process, shared by every strategy built from one
// declared plugin of one plan (in practice: of one runtime). It is started
// by the first strategy that needs it, restarted on the next need after a
// crash (with backoff), and killed when the last strategy closes.
type proc struct {
	key  *plan.AuthPlugin
	name string
	env  []string // resolved: exactly what ai.auth_plugins.<name>.env declares
	log  *slog.Logger
	red  *redactor

	wg sync.WaitGroup // kills of crashed processes in flight

	// stop ends with the last reference: a start in flight then has its
	// process killed (exec.CommandContext), so that releasing never waits
	// out a slow start.
	stop   context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	refs      int
	closed    bool
	client    *goplugin.Client
	wire      *wire
	pid       int
	dir       string        // the private directory of its socket, removed when it is killed
	gen       uint64        // bumped by every successful start
	starting  chan struct{} // non-nil while a start runs; closed when it ends
	startErr  error         // why the last start failed
	failures  int           // crashes and failed starts since the last good call
	notBefore time.Time     // no start before this (backoff)
	nextID    int
}

// procs holds the live processes by declaration: one per *plan.AuthPlugin.
var procs = struct {
	mu sync.Mutex
	m  map[*plan.AuthPlugin]*proc
}{m: map[*plan.AuthPlugin]*proc{}}

// acquire returns the process for the plugin declared as spec, taking a
// reference. It does not start it.
func acquire(ctx context.Context, name string, spec *plan.AuthPlugin, env authlive.Env) (*proc, error) {
	// Resolve the declared environment first, outside the lock: a missing
	// secret fails this build, and resolving twice is cheap.
	penv, secretVals, err := resolveEnv(ctx, env, name, spec)
	if err != nil {
		return nil, err
	}
	procs.mu.Lock()
	defer procs.mu.Unlock()
	p := procs.m[spec]
	if p == nil {
		log := env.Logger
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		p = &proc{key: spec, name: name, env: penv, log: log, red: &redactor{}}
		p.stop, p.cancel = context.WithCancel(context.Background())
		procs.m[spec] = p
	}
	p.red.add(secretVals...)
	p.mu.Lock()
	p.refs++
	p.mu.Unlock()
	return p, nil
}

func resolveEnv(ctx context.Context, env authlive.Env, name string, spec *plan.AuthPlugin) ([]string, []string, error) {
	var out, secretVals []string
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		v := spec.Env[k]
		if v.Ref == nil {
			out = append(out, k+"="+v.Literal)
			continue
		}
		if env.Secrets == nil {
			return nil, nil, diag.New(diag.SecretUnresolved, "auth plugin %q: env %s: no secret resolver", name, k)
		}
		val, err := env.Secrets.Resolve(ctx, *v.Ref)
		if err != nil {
			return nil, nil, fmt.Errorf("auth plugin %q: env %s: %w", name, k, err)
		}
		out = append(out, k+"="+val.Reveal())
		secretVals = append(secretVals, val.Reveal())
	}
	return out, secretVals, nil
}

// instance names a new strategy in the process.
func (p *proc) instance() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	return strconv.Itoa(p.nextID)
}

var errClosed = errors.New("the auth plugin is closed")

// ensure returns a connection to a running process and its generation,
// starting the process when none runs. Concurrent callers share one start,
// each waiting no longer than its ctx allows. After a crash or a failed
// start, a new start waits out a backoff; until then ensure fails at once.
func (p *proc) ensure(ctx context.Context) (*wire, uint64, error) {
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, 0, errClosed
		}
		if p.wire != nil {
			w, gen := p.wire, p.gen
			p.mu.Unlock()
			return w, gen, nil
		}
		if p.starting == nil {
			if wait := time.Until(p.notBefore); wait > 0 {
				err := p.startErr
				p.mu.Unlock()
				if err != nil {
					return nil, 0, err
				}
				return nil, 0, diag.New(diag.MCPAuthStrategyInvalid, "auth plugin %q stopped; it is started again in %s", p.name, wait.Round(time.Millisecond))
			}
			p.starting = make(chan struct{})
			go p.start(p.starting)
		}
		ch := p.starting
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("auth plugin %q: waiting for the process to start: %w", p.name, ctx.Err())
		}
		p.mu.Lock()
		if p.wire == nil && !p.closed && p.startErr != nil {
			// This start failed: report it rather than start again.
			err := p.startErr
			p.mu.Unlock()
			return nil, 0, err
		}
	}
}

// start starts the process and publishes the result; done is closed when
// it is known (and, if the proc was closed meanwhile, the process is dead).
func (p *proc) start(done chan struct{}) {
	client, w, pid, dir, err := p.launch()
	p.mu.Lock()
	if err == nil && p.closed {
		p.mu.Unlock()
		kill(client, pid, dir)
		p.mu.Lock()
		err = errClosed
	}
	if err != nil {
		p.startErr = err
		p.failures++
		p.notBefore = time.Now().Add(backoff(p.failures))
	} else {
		p.client, p.wire, p.pid, p.dir, p.startErr = client, w, pid, dir, nil
		p.gen++
	}
	p.starting = nil
	p.mu.Unlock()
	close(done)
	if err == nil {
		p.log.Info("auth plugin started", "plugin", p.name, "pid", pid)
	} else if !errors.Is(err, errClosed) {
		p.log.Warn("auth plugin did not start", "plugin", p.name, "code", diag.CodeOf(err))
		p.log.Debug("auth plugin did not start", "plugin", p.name, "reason", p.red.redact(err.Error()))
	}
}

// launch verifies the binary and starts it. A binary whose checksum does
// not match is never started.
func (p *proc) launch() (_ *goplugin.Client, _ *wire, _ int, dir string, err error) {
	path, err := exec.LookPath(p.key.Command)
	if err == nil {
		path, err = filepath.Abs(path)
	}
	if err != nil {
		return nil, nil, 0, "", diag.Wrap(diag.MCPAuthStrategyInvalid, err, "auth plugin %q: command %s cannot be run", p.name, p.key.Command)
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return nil, nil, 0, "", diag.Wrap(diag.MCPAuthStrategyInvalid, err, "auth plugin %q: %s cannot be read", p.name, path)
	}
	if want := strings.ToLower(p.key.SHA256); sum != want {
		return nil, nil, 0, "", diag.New(diag.MCPAuthStrategyInvalid,
			"auth plugin %q: %s has SHA-256 %s…, not the %s… that ai.auth_plugins.%s.sha256 declares; it was not started",
			p.name, path, sum[:12], want[:min(12, len(want))], p.name)
	}
	// Between the check and the exec the file could change: the directory
	// holding plugin binaries must be writable by the deployer only.
	cmd := exec.CommandContext(p.stop, path, p.key.Args...)
	cmd.Cancel = func() error { killGroup(cmd.Process.Pid); return nil } // what it started holds its pipes too
	// The plugin's socket is made in a directory of its own, removed
	// when the process is killed: a plugin killed (not asked to stop)
	// cannot remove its socket itself, and would leave one in the
	// system's temporary directory at every restart.
	dir, err = os.MkdirTemp("", "heddle-plugin-")
	if err != nil {
		return nil, nil, 0, "", diag.Wrap(diag.MCPAuthStrategyInvalid, err, "auth plugin %q: no directory for its socket", p.name)
	}
	cmd.Env = append(slices.Clone(p.env), goplugin.EnvUnixSocketDir+"="+dir)
	cmd.SysProcAttr = sysProcAttr()
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  pluginsdk.Handshake,
		Plugins:          pluginSet,
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		// The plugin gets none of heddle's environment (go-plugin's
		// default hands it all of it), and a private mTLS channel: the
		// socket carries credentials.
		SkipHostEnv:  true,
		AutoMTLS:     true,
		StartTimeout: StartTimeout,
		Logger:       hclogFor(p.log, p.name, p.red),
		// What the plugin writes to os.Stderr after Serve arrives here;
		// its stdout is discarded.
		SyncStderr: &slogWriter{log: p.log, plugin: p.name, red: p.red},
	})
	rpc, err := client.Client()
	if err != nil {
		kill(client, 0, dir)
		return nil, nil, 0, "", diag.Wrap(diag.MCPAuthStrategyInvalid, redactedError(p.red, err), "auth plugin %q did not start", p.name)
	}
	raw, err := rpc.Dispense(pluginsdk.PluginName)
	w, ok := raw.(*wire)
	if err != nil || !ok {
		kill(client, 0, dir)
		if err == nil {
			err = fmt.Errorf("unexpected plugin type %T", raw)
		}
		return nil, nil, 0, "", diag.Wrap(diag.MCPAuthStrategyInvalid, err, "auth plugin %q does not serve heddle's strategy protocol", p.name)
	}
	pid := 0
	if rc := client.ReattachConfig(); rc != nil {
		pid = rc.Pid
	}
	return client, w, pid, dir, nil
}

// kill ends a plugin's process: what is left of its process group first
// (pid 0 when it is not known), then go-plugin's client, whose graceful
// shutdown would otherwise wait for the plugin's calls in flight — a
// plugin holds nothing worth that wait (headers it would fetch again), and
// a call that hangs on its identity provider would hold up a start-up that
// is failing, or a shutdown, for as long as the plugin lets it. Then the
// directory of its socket goes.
func kill(client *goplugin.Client, pid int, dir string) {
	if pid != 0 {
		killGroup(pid)
	}
	client.Kill()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// broken records that the process of generation gen stopped answering: it
// is killed, and started again on the next need.
func (p *proc) broken(gen uint64, cause error) {
	p.mu.Lock()
	if p.gen != gen || p.wire == nil {
		p.mu.Unlock()
		return // already handled
	}
	client, pid, dir := p.client, p.pid, p.dir
	p.client, p.wire, p.pid, p.dir, p.startErr = nil, nil, 0, "", nil
	p.failures++
	wait := backoff(p.failures)
	p.notBefore = time.Now().Add(wait)
	p.wg.Add(1)
	p.mu.Unlock()
	p.log.Warn("auth plugin process stopped; it is started again on the next need", "plugin", p.name, "pid", pid, "backoff", wait)
	p.log.Debug("auth plugin process stopped", "plugin", p.name, "pid", pid, "reason", p.red.redact(cause.Error()))
	go func() {
		defer p.wg.Done()
		kill(client, pid, dir)
	}()
}

// healthy records a good call: the backoff starts over.
func (p *proc) healthy() {
	p.mu.Lock()
	p.failures = 0
	p.mu.Unlock()
}

// backoff is the wait before the next start after n consecutive failures:
// none after the first (a crash after a good run restarts at once), then
// 100ms doubling up to 30s.
func backoff(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	return min(100*time.Millisecond<<min(n-2, 20), 30*time.Second)
}

// release drops a reference; the last one kills the process (waiting for a
// start in flight to finish first) and forgets it.
func (p *proc) release() {
	procs.mu.Lock()
	p.mu.Lock()
	p.refs--
	if p.refs > 0 {
		p.mu.Unlock()
		procs.mu.Unlock()
		return
	}
	p.closed = true
	if procs.m[p.key] == p {
		delete(procs.m, p.key)
	}
	client, pid, dir, starting := p.client, p.pid, p.dir, p.starting
	p.client, p.wire, p.pid, p.dir = nil, nil, 0, ""
	p.mu.Unlock()
	procs.mu.Unlock()
	p.cancel() // a start in flight ends now
	if starting != nil {
		<-starting // the start kills what it started
	}
	if client != nil {
		kill(client, pid, dir)
		p.log.Debug("auth plugin stopped", "plugin", p.name, "pid", pid)
	}
	p.wg.Wait()
}

// redactedError is err with known secrets blanked out of its text.
func redactedError(red *redactor, err error) error {
	return errors.New(red.redact(err.Error()))
}
