package heddlecmd

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// lock writes the lock file from what the servers offer now, or, with
// --check, compares the file with it and writes nothing: exit 1 and one
// line per drift when they differ.
func (e *invocation) lock(args []string) int {
	var rf runFlags
	var check bool
	if _, err := e.parseCommand("lock", args, 0, 0, func(fs *flag.FlagSet) {
		rf.register(fs)
		fs.BoolVar(&check, "check", false, "compare the lock file with what the servers offer now; exit 1 and print the drift when they differ, writing nothing")
	}); err != nil {
		return e.usageError(err)
	}
	log, err := rf.logger(e)
	if err != nil {
		return e.usageError(err)
	}
	path := rf.lock
	var old *runtime.Lock
	if check {
		if old, err = runtime.ReadLock(path); err != nil {
			e.printFailure(lockError(path, err, false))
			return ExitFail
		}
	}
	rf.eager = true // lazy servers too: their pins are what they offer
	rf.lock = ""    // open with no pins: what the servers offer now is what is compared or written
	rt, code := e.open(context.Background(), &rf, log, false)
	if rt == nil {
		return code
	}
	defer rt.Close()
	if check {
		return e.lockCheck(path, rt.CheckLock(old))
	}
	l := rt.Lock()
	b, err := l.Encode()
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		e.printFailure(lockError(path, err, true))
		return ExitFail
	}
	deps, n := 0, 0
	for _, pins := range l.Kinds {
		deps += len(pins)
		for _, p := range pins {
			n += len(p.Tools)
		}
	}
	fmt.Fprintf(e.stdout, "wrote %s: %s, %s\n", path, plural(deps, "server"), plural(n, "tool"))
	return ExitOK
}

// lockCheck reports the drift of heddle lock --check: in text one line per
// difference on stdout and a coded summary on stderr, in JSON
// {"ok", "drift": [{"server", "tool", "change", "fields", "to"}]}.
func (e *invocation) lockCheck(path string, drift []driver.Drift) int {
	if e.g.format == "json" {
		if drift == nil {
			drift = []driver.Drift{}
		}
		writeJSON(e.stdout, map[string]any{"ok": len(drift) == 0, "drift": drift})
	} else {
		for _, d := range drift {
			fmt.Fprintln(e.stdout, d.String())
		}
	}
	if len(drift) == 0 {
		if e.g.format != "json" {
			fmt.Fprintf(e.stdout, "%s matches what the servers offer\n", path)
		}
		return ExitOK
	}
	if e.g.format != "json" {
		err := diag.New(diag.ToolDefinitionChanged, "%s differs from what the servers offer (%s); review the drift, then run heddle lock to pin it", path, plural(len(drift), "change"))
		fmt.Fprintf(e.stderr, "heddle: %v\n", err)
	}
	return ExitFail
}
