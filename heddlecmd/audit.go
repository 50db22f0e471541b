package heddlecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/heddlehq/heddle/audit"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/config/setting"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
)

// auditTrail is the audit writer a command opened with its first runtime,
// closed (queued records written, the file fsynced) when the command ends.
type auditTrail struct {
	w    *audit.Writer
	stop func() // stops relaying SIGHUP
}

// openAudit opens p's audit trail once per command: a reload keeps the
// writer of the first generation, and its chain.
func (e *invocation) openAudit(ctx context.Context, p *plan.Plan, log *slog.Logger) error {
	if p.Audit == nil || e.audit != nil {
		return nil
	}
	key, err := secrets.New(secrets.Options{Dir: p.Secrets.Dir}).Resolve(ctx, *p.Audit.KeyRef)
	if err != nil {
		return diag.Wrap(diag.CodeOf(err), err, "audit.key_ref: %v", err)
	}
	if n := len(key.Reveal()); n < audit.MinKeyBytes {
		return diag.New(diag.ConfigValueInvalid, "audit.key_ref (%s): the key has %d bytes, fewer than %d", p.Audit.KeyRef, n, audit.MinKeyBytes)
	}
	o := audit.Options{Path: p.Audit.Path, Key: []byte(key.Reveal()), Stdout: e.stdout, Version: Version, Logger: log, OnLost: e.onAuditLost}
	if e.cmd == "mcp" {
		o.Stdout = e.stderr // stdout is the protocol
	}
	w, err := audit.Open(o)
	if err != nil {
		return diag.Wrap(diag.ConfigValueInvalid, err, "audit.path: %v", err)
	}
	t := &auditTrail{w: w, stop: func() {}}
	if e.cmd == "serve" {
		// logrotate's postrotate sends SIGHUP: the file is opened anew
		// (serve reloads its configuration on the same signal).
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-hup:
					w.Reopen()
				case <-done:
					return
				}
			}
		}()
		t.stop = func() { signal.Stop(hup); close(done) }
	}
	e.audit = t
	return nil
}

// closeAudit closes the command's audit trail, if it opened one.
func (e *invocation) closeAudit() {
	if e.audit == nil {
		return
	}
	e.audit.stop()
	if err := e.audit.w.Close(); err != nil {
		fmt.Fprintf(e.stderr, "heddle: %v\n", diag.Wrap(diag.ConfigValueInvalid, err, "audit.path: the audit file was not written whole: %v", err))
	}
	e.audit = nil
}

// observeCall is the runtime's OnCall: the command's metrics, if any, and
// its audit trail, if any.
func (e *invocation) observeCall() func(runtime.CallEvent) {
	if e.audit == nil {
		return e.onCall
	}
	w, m := e.audit.w, e.onCall
	return func(ev runtime.CallEvent) {
		if m != nil {
			m(ev)
		}
		w.Observe(ev)
	}
}

// auditCmd is heddle audit verify FILE…: it checks the chain of audit
// files, the oldest first, with --key-ref or the deployment's
// audit.key_ref.
func (e *invocation) auditCmd(args []string) int {
	var keyRef string
	pos, err := e.parseCommand("audit", args, 2, -1, func(fs *flag.FlagSet) {
		fs.StringVar(&keyRef, "key-ref", "", "the reference of the key: ${secrets:…}, ${env:NAME} or ${file:PATH} (default: the deployment's audit.key_ref)")
	})
	if err == nil && pos[0] != "verify" {
		err = &unknownError{problem: fmt.Sprintf("unknown audit command %q", pos[0]), got: pos[0], label: "audit commands", valid: []string{"verify"}}
	}
	if err != nil {
		return e.usageError(err)
	}
	key, err := e.auditKey(keyRef)
	if err != nil {
		e.printFailure(err)
		return ExitFail
	}
	s, err := audit.Verify(key, pos[1:]...)
	if err != nil {
		var be *audit.BrokenError
		if errors.As(err, &be) {
			err = diag.Wrap(diag.AuditChainBroken, err, "%v", err)
		} else {
			err = diag.Wrap(diag.AuditChainBroken, err, "the audit file cannot be read: %v", err)
		}
		e.printFailure(err)
		return ExitFail
	}
	if e.g.format == "json" {
		writeJSON(e.stdout, map[string]any{"ok": true, "records": s.Records, "first_seq": s.FirstSeq, "last_seq": s.LastSeq, "last_mac": s.LastMAC})
		return ExitOK
	}
	switch {
	case s.Records == 0:
		fmt.Fprintln(e.stdout, "ok: no records")
	case s.FirstSeq > 0:
		fmt.Fprintf(e.stdout, "ok: %d records, seq %d to %d (the chain begins in an earlier file); last MAC %s\n", s.Records, s.FirstSeq, s.LastSeq, s.LastMAC)
	default:
		fmt.Fprintf(e.stdout, "ok: %d records, seq %d to %d; last MAC %s\n", s.Records, s.FirstSeq, s.LastSeq, s.LastMAC)
	}
	return ExitOK
}

// auditKey resolves the key audit verify checks with: --key-ref, or the
// deployment's audit.key_ref, against the deployment's secrets directory.
func (e *invocation) auditKey(keyRef string) ([]byte, error) {
	cfg, _ := config.Load(e.options())
	var dep config.Deployment
	if cfg != nil && cfg.Deployment != nil {
		dep = *cfg.Deployment
	}
	var ref setting.Ref
	switch {
	case keyRef != "":
		ref = setting.ParseRef(keyRef)
		if !ref.Valid() {
			return nil, diag.New(diag.ConfigValueInvalid, "--key-ref is %s", ref.Problem)
		}
	case dep.Audit != nil && dep.Audit.KeyRef.Valid():
		ref = *dep.Audit.KeyRef
	default:
		return nil, diag.New(diag.AuditInvalid, "no key to verify with: give --key-ref, or run where the deployment's audit.key_ref is set")
	}
	v, err := secrets.New(secrets.Options{Dir: dep.AI.Secrets.Dir}).Resolve(context.Background(), ref)
	if err != nil {
		return nil, diag.Wrap(diag.CodeOf(err), err, "the audit key: %v", err)
	}
	return []byte(v.Reveal()), nil
}
