package heddlecmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
	"github.com/heddlehq/heddle/statestore"
	"github.com/heddlehq/heddle/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// callerFlags name the caller a command acts for: --as, --role, --claim.
type callerFlags struct {
	as     string
	roles  listFlag
	claims listFlag
}

func (c *callerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.as, "as", "", "the caller's subject")
	fs.Var(&c.roles, "role", "a role of the caller (repeatable)")
	fs.Var(&c.claims, "claim", "a claim of the caller, NAME=VALUE (repeatable)")
}

// with returns ctx carrying the caller the flags name, or ctx as it is
// when none of them is given: then the command acts as the operator, who
// is listed every tool (and is told TOOL_DENIED, not TOOL_UNKNOWN, of a
// tool the rules deny to everyone).
func (c *callerFlags) with(ctx context.Context) (context.Context, error) {
	if c.as == "" && len(c.roles) == 0 && len(c.claims) == 0 {
		return ctx, nil
	}
	id := heddle.Identity{Subject: c.as, Roles: c.roles}
	for _, kv := range c.claims {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--claim takes NAME=VALUE")
		}
		if id.Claims == nil {
			id.Claims = map[string]string{}
		}
		id.Claims[k] = v
	}
	return heddle.WithCaller(ctx, id), nil
}

// runFlags are the flags of the commands that open the runtime.
type runFlags struct {
	logLevel  string
	logFormat string
	lock      string
	lockSet   bool // --lock was given: a missing file is an error
	eager     bool // connect lazy servers at start-up (heddle lock)
}

// DefaultLockFile is where heddle lock writes, and where the other commands
// read pins from when it exists.
const DefaultLockFile = "heddle.lock"

func (r *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.logLevel, "log-level", "warn", "log level: debug, info, warn or error")
	fs.StringVar(&r.logFormat, "log-format", "text", "log format: text (key=value lines) or json (one object a line)")
	fs.StringVar(&r.lock, "lock", DefaultLockFile, "lock file pinning tool definitions (the default is used when it exists; a file named here must exist)")
}

func (r *runFlags) logger(e *invocation) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(r.logLevel)); err != nil {
		return nil, unknownValue("log-level", r.logLevel, logLevels)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch r.logFormat {
	case "text":
		return slog.New(traceIDs(slog.NewTextHandler(e.stderr, opts))), nil
	case "json":
		return slog.New(traceIDs(slog.NewJSONHandler(e.stderr, opts))), nil
	}
	return nil, unknownValue("log-format", r.logFormat, logFormats)
}

// only returns a copy of p holding only the named agents, so that opening
// it opens only the servers they grant.
func only(p *plan.Plan, agents ...string) (*plan.Plan, error) {
	q := *p
	q.Agents = map[string]*plan.Agent{}
	for _, a := range agents {
		pa, ok := p.Agents[a]
		if !ok {
			names := make([]string, 0, len(p.Agents))
			for n := range p.Agents {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, diag.New(diag.AgentUnknown, "%s", (&unknownError{problem: fmt.Sprintf("no agent %q", a), got: a, label: "agents", valid: names}).text("; "))
		}
		q.Agents[a] = pa
	}
	return &q, nil
}

// open compiles and opens the runtime for the given agents (all when none).
// On failure it has said why, and returns nil and the exit status.
func (e *invocation) open(ctx context.Context, rf *runFlags, log *slog.Logger, approve bool, agents ...string) (*runtime.Runtime, int) {
	rt, err := e.tryOpen(ctx, rf, log, approve, agents...)
	if err != nil {
		e.printFailure(err)
		return nil, ExitFail
	}
	return rt, ExitOK
}

// tryOpen is open that hands back the failure rather than printing it
// (heddle mcp answers the host with it too). Warnings go to stderr.
func (e *invocation) tryOpen(ctx context.Context, rf *runFlags, log *slog.Logger, approve bool, agents ...string) (*runtime.Runtime, error) {
	p, ds := e.compile(agents...)
	if p == nil {
		return nil, ds.Err()
	}
	if e.g.format != "json" {
		printDiagnostics(e.stderr, ds)
	}
	if len(agents) > 0 {
		var err error
		if p, err = only(p, agents...); err != nil {
			return nil, err
		}
	}
	if e.shareState && e.state == nil {
		st, err := openState(ctx, p, log)
		if err != nil {
			return nil, err
		}
		e.state = st
	}
	if err := e.openAudit(ctx, p, log); err != nil {
		return nil, err
	}
	opts, err := e.runtimeOptions(ctx, rf, log, approve)
	if err != nil {
		return nil, err
	}
	return runtime.Open(ctx, p, opts)
}

// openState opens p's serve.state, its url_ref resolved as the runtime
// resolves references, and checks it once: a store that is down at start
// is a dependency that is down (logged, and /readyz says so), not a
// failure to start.
func openState(ctx context.Context, p *plan.Plan, log *slog.Logger) (*statestore.Store, error) {
	st, err := statestore.Open(ctx, p.Serve.State, secrets.New(secrets.Options{Dir: p.Secrets.Dir}), log)
	if err != nil {
		return nil, err
	}
	if st.Shared() {
		_ = st.Check(ctx)
		log.Info("serve.state", "store", st.String(), "on_error", p.Serve.State.OnError)
	}
	return st, nil
}

// openAgent opens the runtime of agent alone (open) and returns it with
// the agent's toolset. On failure it has said why, and returns nil and the
// exit status. The caller closes the runtime.
func (e *invocation) openAgent(ctx context.Context, rf *runFlags, log *slog.Logger, approve bool, agent string) (*runtime.Runtime, *runtime.Toolset, int) {
	rt, ts, err := e.tryOpenAgent(ctx, rf, log, approve, agent)
	if err != nil {
		e.printFailure(err)
		return nil, nil, ExitFail
	}
	return rt, ts, ExitOK
}

// tryOpenAgent is openAgent that hands back the failure.
func (e *invocation) tryOpenAgent(ctx context.Context, rf *runFlags, log *slog.Logger, approve bool, agent string) (*runtime.Runtime, *runtime.Toolset, error) {
	rt, err := e.tryOpen(ctx, rf, log, approve, agent)
	if err != nil {
		return nil, nil, err
	}
	ts, err := rt.Toolset(agent)
	if err != nil {
		rt.Close()
		return nil, nil, err
	}
	return rt, ts, nil
}

// runtimeOptions are the options the commands open the runtime with,
// reading the lock file (a reload reads it again).
func (e *invocation) runtimeOptions(ctx context.Context, rf *runFlags, log *slog.Logger, approve bool) (runtime.Options, error) {
	kinds := e.set.WithMCP(func(k *mcplive.Kind) { k.Eager, k.OnOperation = rf.eager, e.onMCP })
	opts := runtime.Options{Kinds: kinds.Runtime(), Logger: log, ClientName: "heddle", ClientVersion: Version, OnCall: e.observeCall(), DigestArgs: e.audit != nil,
		TracerProvider: e.startTracing(ctx, log), TraceContent: e.traceContent()}
	if e.flags != nil {
		e.flags.Visit(func(f *flag.Flag) { rf.lockSet = rf.lockSet || f.Name == "lock" })
	}
	if rf.lock != "" {
		switch l, err := runtime.ReadLock(rf.lock); {
		case err == nil:
			opts.Lock = l
		case !errors.Is(err, fs.ErrNotExist) || rf.lockSet:
			return opts, lockError(rf.lock, err, false)
		}
	}
	if approve {
		opts.Approver = func(context.Context, runtime.ApprovalRequest) (bool, error) { return true, nil }
	}
	// Every generation counts its rates in the store opened at start: the
	// serve: section holds for the server's life.
	if r := e.state.Rates(); r != nil {
		opts.Rates, opts.OnRateFallback = r, e.onRateFallback
	}
	return opts, nil
}

// lockError is the LOCK_INVALID error of a lock file that cannot be read
// (written, for heddle lock): one named with --lock that does not exist,
// or any that cannot be opened or parsed (runtime.ReadLock's own messages
// name the file and the problem).
func lockError(path string, err error, writing bool) error {
	var pe *fs.PathError
	switch {
	case writing && errors.As(err, &pe):
		return diag.Wrap(diag.LockInvalid, err, "lock file %s cannot be written: %v", path, pe.Err)
	case errors.Is(err, fs.ErrNotExist):
		return diag.Wrap(diag.LockInvalid, err, "lock file %s does not exist; write it with heddle lock --lock %s, or leave --lock out to use ./%s when there is one", path, path, DefaultLockFile)
	case errors.As(err, &pe):
		return diag.Wrap(diag.LockInvalid, err, "lock file %s cannot be read: %v", path, pe.Err)
	}
	return diag.Wrap(diag.LockInvalid, err, "%v", err)
}

// printFailure prints a coded failure: in JSON as {"error": {"code",
// "message"}}, in text as one line per coded error.
func (e *invocation) printFailure(err error) {
	if e.g.format == "json" {
		writeJSON(e.stdout, map[string]any{"error": map[string]any{"code": diag.CodeOf(err), "message": err.Error()}})
		return
	}
	var se *runtime.StartupError
	var le *diag.ListError
	switch {
	case errors.As(err, &se):
		for _, f := range se.Failures {
			fmt.Fprintf(e.stderr, "heddle: %v\n", f.Err)
		}
	case errors.As(err, &le):
		printDiagnostics(e.stderr, le.Diagnostics)
	default:
		fmt.Fprintf(e.stderr, "heddle: %v\n", err)
	}
}

func (e *invocation) tools(args []string) int {
	var tf toolsFlags
	pos, err := e.parseCommand("tools", args, 1, 1, tf.register)
	if err == nil {
		err = tf.check(e.g.format)
	}
	if err != nil {
		return e.usageError(err)
	}
	rf := &tf.runFlags
	log, err := rf.logger(e)
	if err != nil {
		return e.usageError(err)
	}
	ctx := context.Background()
	listCtx, err := tf.caller.with(ctx)
	if err != nil {
		return e.usageError(err)
	}
	rt, ts, code := e.openAgent(ctx, rf, log, false, pos[0])
	if rt == nil {
		return code
	}
	defer rt.Close()
	// Operators see every tool, deferred ones marked, and --as (--role,
	// --claim) what that caller may use; a provider's format is what a
	// model is given when a conversation starts.
	list := ts.Tools
	if e.g.format != "text" && e.g.format != "json" {
		list = ts.NewView().Tools
	}
	tools, err := list(listCtx)
	if err == nil {
		err = e.printTools(tools, tf.strict)
	}
	if err != nil {
		e.printFailure(err)
		return ExitFail
	}
	e.printUnavailable(ts)
	return ExitOK
}

// printUnavailable says on standard error which of the agent's
// dependencies are down, and why: their tools are not in the list.
func (e *invocation) printUnavailable(ts *runtime.Toolset) {
	down := ts.Unavailable()
	for _, name := range slices.Sorted(maps.Keys(down)) {
		fmt.Fprintf(e.stderr, "heddle: %s is unavailable (%s): its tools are not listed\n", name, down[name])
	}
}

func (e *invocation) printTools(tools []runtime.Tool, strict bool) error {
	switch e.g.format {
	case "json":
		writeJSON(e.stdout, wire.Tools(tools))
		return nil
	case "text":
	default:
		return e.printProviderTools(tools, strict)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tSERVER\tFLAGS\tCLASSIFIED_BY\tDESCRIPTION")
	for _, t := range tools {
		var flags []string
		if t.Destructive {
			flags = append(flags, "destructive")
		}
		if t.ReadOnly {
			flags = append(flags, "read-only")
		}
		if t.Deferred {
			flags = append(flags, "deferred")
		}
		if len(flags) == 0 {
			flags = []string{"-"}
		}
		desc, _, _ := strings.Cut(t.Description, "\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Kind, t.Server, strings.Join(flags, ","), t.ClassifiedBy, desc)
	}
	return tw.Flush()
}

func (e *invocation) call(args []string) int {
	var (
		rf      runFlags
		cf      callerFlags
		argJSON string
		yes     bool
	)
	pos, err := e.parseCommand("call", args, 2, 2, func(fs *flag.FlagSet) {
		rf.register(fs)
		fs.StringVar(&argJSON, "args", "{}", "the tool's arguments, a JSON object")
		cf.register(fs)
		fs.BoolVar(&yes, "yes", false, "approve the call if policy asks for approval")
	})
	if err != nil {
		return e.usageError(err)
	}
	var callArgs map[string]any
	if err := json.Unmarshal([]byte(argJSON), &callArgs); err != nil {
		return e.usageError(fmt.Errorf("--args must be a JSON object: %v", err))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	callCtx, err := cf.with(ctx)
	if err != nil {
		return e.usageError(err)
	}
	log, err := rf.logger(e)
	if err != nil {
		return e.usageError(err)
	}
	rt, ts, code := e.openAgent(ctx, &rf, log, yes, pos[0])
	if rt == nil {
		return code
	}
	defer rt.Close()
	res, err := ts.Call(callCtx, pos[1], callArgs)
	if err != nil {
		e.printFailure(err)
		return ExitFail
	}
	if runtime.RefusalCode(res) == diag.ToolUnknown {
		suggestTools(callCtx, ts, pos[0], pos[1], res) // what the caller is listed
	}
	e.printResult(res)
	if res.IsError {
		return ExitFail
	}
	return ExitOK
}

// printResult prints a call's result: JSON in MCP's own shape, or the text
// parts (and a line per other part).
func (e *invocation) printResult(res *mcp.CallToolResult) {
	if e.g.format == "json" {
		writeJSON(e.stdout, wire.Result(res))
		return
	}
	w := e.stdout
	if res.IsError {
		w = e.stderr
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			fmt.Fprintln(w, c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link %s]\n", c.URI)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				fmt.Fprintf(w, "[resource %s]\n", c.Resource.URI)
			}
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		fmt.Fprintln(w, string(b))
	}
}

func (e *invocation) health(args []string) int {
	var rf runFlags
	pos, err := e.parseCommand("health", args, 0, 1, rf.register)
	if err != nil {
		return e.usageError(err)
	}
	log, err := rf.logger(e)
	if err != nil {
		return e.usageError(err)
	}
	rt, code := e.open(context.Background(), &rf, log, false, pos...)
	if rt == nil {
		return code
	}
	defer rt.Close()
	rep := rt.Health()
	if e.g.format == "json" {
		writeJSON(e.stdout, rep)
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "DEPENDENCY\tKIND\tSTATE\tREQUIRED\tTOOLS\tCODE\tREASON")
		for _, d := range rep.Dependencies {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%d\t%s\t%s\n", d.Name, d.Kind, d.State, d.Required, d.Tools, orDash(string(d.Code)), orDash(d.Reason))
		}
		_ = tw.Flush()
		if rep.Ready {
			fmt.Fprintln(e.stdout, "ready")
		} else {
			fmt.Fprintln(e.stdout, "not ready")
		}
	}
	if !rep.Ready {
		return ExitFail
	}
	return ExitOK
}

// orDash is s, or "-" for a column left empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
