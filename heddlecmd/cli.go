package heddlecmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/heddlehq/heddle/builtin"
	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/statestore"
	"github.com/heddlehq/heddle/usecase"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
)

// globals are the flags every command accepts.
type globals struct {
	config, env, agents, format string
	configSet, agentsSet        bool
}

func defaultGlobals() globals {
	return globals{config: "config/api.yaml", agents: "agents", format: "text"}
}

// register adds the global flags to fs, keeping values already parsed (the
// global flags may stand before or after the command).
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.config, "config", g.config, "deployment file")
	fs.StringVar(&g.env, "env", g.env, "environment overlay name")
	fs.StringVar(&g.agents, "agents", g.agents, "directory of agent artifacts")
	fs.StringVar(&g.format, "format", g.format, "output format")
}

// noteSet records which path flags were given explicitly.
func (g *globals) noteSet(fs *flag.FlagSet) {
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "config":
			g.configSet = true
		case "agents":
			g.agentsSet = true
		}
	})
}

// invocation is one invocation's surroundings.
type invocation struct {
	stdout, stderr io.Writer
	stdin          io.Reader // heddle mcp's protocol; nil is an empty input
	g              globals
	environ        []string
	flags          *flag.FlagSet // the command's, once parsed
	onCall         func(runtime.CallEvent)
	onMCP          func(mcplive.Operation)
	onRateFallback func(agent string)
	tracing        *tracing     // set up by the first open; stopped as the command ends
	example        fs.FS        // Options.Example
	toldExample    bool         // the fallback to the example was announced
	kinds          *grants.Set  // Options.Kinds' config halves
	set            *builtin.Set // Options.Kinds: both halves
	cmd            string       // the command being run, once known
	probe          bool         // only record the command's flag set (commandFlags)

	// heddle serve opens serve.state with its first runtime (shareState);
	// state is the store it opened, which the command closes.
	shareState bool
	state      *statestore.Store

	audit       *auditTrail // opened with the first runtime; closed as the command ends
	onAuditLost func()      // told of each audit record lost (serve's metrics)
}

func mainEnv(e *invocation, args []string) int {
	defer func() { e.tracing.stop() }() // e.tracing is set, if at all, by the command
	defer e.closeAudit()                // after the command closed its runtime
	fs := e.flagSet("heddle")
	rest, err := parse(fs, args, 1)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			e.printUsage(e.stdout)
			return ExitOK
		}
		return e.usageError(e.flagError(err, fs))
	}
	e.g.noteSet(fs)
	if len(rest) == 0 {
		e.printUsage(e.stderr)
		return ExitUsage
	}
	return e.dispatch(rest[0], rest[1:])
}

// dispatch runs the command called name with its arguments.
func (e *invocation) dispatch(name string, args []string) int {
	e.cmd = name
	switch name {
	case "check":
		return e.check(args)
	case "plan":
		return e.plan(args)
	case "version":
		return e.version(args)
	case "tools":
		return e.tools(args)
	case "call":
		return e.call(args)
	case "health":
		return e.health(args)
	case "serve":
		return e.serve(args)
	case "mcp":
		return e.mcpServe(args)
	case "lock":
		return e.lock(args)
	case "import":
		return e.importCmd(args)
	case "audit":
		return e.auditCmd(args)
	case "help":
		return e.help(args)
	case "completion":
		return e.completion(args)
	case completeCommand:
		return e.complete(args)
	}
	e.cmd = ""
	return e.usageError(unknownCommand(name))
}

func (e *invocation) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	e.g.register(fs)
	return fs
}

// parse parses flags wherever they stand among the positional arguments and
// returns the positional ones. With stopAfter > 0 it stops at that many
// positional arguments and returns the rest unparsed after them.
func parse(fs *flag.FlagSet, args []string, stopAfter int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
		if stopAfter > 0 && len(pos) == stopAfter {
			return append(pos, args...), nil
		}
	}
}

// usageError prints a usage error and returns ExitUsage; for
// errHelpShown, whose help is already printed, it returns ExitOK.
func (e *invocation) usageError(err error) int {
	if errors.Is(err, errHelpShown) {
		return ExitOK
	}
	help := "heddle help"
	if e.cmd != "" {
		help += " " + e.cmd
	}
	fmt.Fprintf(e.stderr, "heddle: %v\nRun '%s' for usage.\n", err, help)
	return ExitUsage
}

// flagError adds to an error of fs.Parse, for a flag fs does not define,
// the closest of its flags and the list of them.
func (e *invocation) flagError(err error, fs *flag.FlagSet) error {
	const undefined = "flag provided but not defined: "
	msg := err.Error()
	if !strings.HasPrefix(msg, undefined) {
		return err
	}
	name := strings.TrimLeft(strings.TrimPrefix(msg, undefined), "-")
	u := &unknownError{problem: msg, got: "--" + name, valid: flagNames(fs)}
	if e.cmd == "" {
		u.label = "global flags"
		var takers []string
		for _, c := range commands {
			if !c.hidden && e.commandFlags(c.name).Lookup(name) != nil {
				takers = append(takers, c.name)
			}
		}
		if len(takers) > 0 {
			u.problem += fmt.Sprintf(" before the command (--%s is a flag of %s: put it after the command)", name, andList(takers))
		}
	} else {
		u.label = "flags of " + e.cmd
	}
	return u
}

// parseCommand parses one command's arguments, with the global flags, and
// checks the value of --format and the number of positional arguments. For
// -h or --help it prints the command's help and returns errHelpShown.
func (e *invocation) parseCommand(name string, args []string, min, max int, extra func(*flag.FlagSet)) ([]string, error) {
	fs := e.flagSet(name)
	if extra != nil {
		extra(fs)
	}
	pos, err := parse(fs, args, 0)
	if errors.Is(err, flag.ErrHelp) {
		e.flags = fs
		if !e.probe {
			if c, ok := lookupCommand(name); ok {
				e.printCommandHelp(e.stdout, c)
			}
		}
		return nil, errHelpShown
	}
	if err != nil {
		return nil, e.flagError(err, fs)
	}
	e.flags = fs
	e.g.noteSet(fs)
	if valid := formatsOf(name); !slices.Contains(valid, e.g.format) {
		return nil, formatError(name, e.g.format, valid)
	}
	if len(pos) < min || (max >= 0 && len(pos) > max) {
		return nil, e.argsError(name, pos)
	}
	return pos, nil
}

// argsError is the usage error for a wrong number of positional arguments:
// it says which are wanted and, for a missing agent, lists the agents.
func (e *invocation) argsError(name string, pos []string) error {
	c, _ := lookupCommand(name)
	if len(pos) < len(c.args) && !c.args[len(pos)].optional {
		missing := c.args[len(pos)]
		msg := fmt.Sprintf("%s: wrong number of arguments: missing %s (usage: heddle %s)", name, missing.name, c.usageLine())
		switch missing.name {
		case agentArg.name:
			dir := e.options().AgentsDir
			if names := e.agentNames(); len(names) > 0 {
				msg += fmt.Sprintf("\n  agents in %s: %s", dir, strings.Join(names, ", "))
			} else {
				msg += fmt.Sprintf("\n  there are no agents in %s (--agents names the directory)", dir)
			}
		case "TOOL":
			msg += fmt.Sprintf("\n  heddle tools %s lists the agent's tools", pos[0])
		}
		return errors.New(msg)
	}
	if len(c.args) == 0 {
		return fmt.Errorf("%s: wrong number of arguments: it takes none", name)
	}
	return fmt.Errorf("%s: wrong number of arguments (usage: heddle %s)", name, c.usageLine())
}

// options says where configuration is read from: the files named, or the
// example (Options.Example), when there is one, no --config was given and the
// default is absent.
func (e *invocation) options() config.Options {
	opts := config.Options{ConfigFile: e.g.config, Env: e.g.env, AgentsDir: e.g.agents, Environ: e.environ}
	if !e.g.configSet && e.example != nil {
		if _, err := os.Stat(e.g.config); errors.Is(err, fs.ErrNotExist) {
			opts.FS = e.example
			if !e.g.agentsSet {
				opts.AgentsDir = "agents"
			}
			if !e.toldExample {
				// Said once, on stderr: the output stays the command's own.
				e.toldExample = true
				fmt.Fprintf(e.stderr, "heddle: %s does not exist here: reading the example configuration built into this binary, whose relative paths (commands, files) are resolved against the working directory (--config FILE reads yours)\n", e.g.config)
			}
		}
	}
	return opts
}

// compile loads and compiles the configuration. With agents named (the
// single-agent commands: tools, call, mcp, health AGENT), another agent's
// errors do not stop the command: they are warnings naming that agent, and
// the plan holds the named agents alone. check, plan and serve name none:
// the whole configuration compiles, or nothing does.
func (e *invocation) compile(agents ...string) (*plan.Plan, diag.Diagnostics) {
	p, ds, _ := e.compileConfig(agents...)
	return p, ds
}

// compileConfig is compile that also returns the configuration it loaded.
func (e *invocation) compileConfig(agents ...string) (*plan.Plan, diag.Diagnostics, *config.Config) {
	opts := e.options()
	cfg, lds := config.Load(opts)
	in := compile.Input{Config: cfg, Kinds: e.kinds, Usecases: usecaseKeys()}
	p, cds := compile.Compile(in)
	ds := append(lds, cds...)
	if len(agents) > 0 && ds.HasErrors() {
		p, ds = compileAgents(in, lds, cds, agents, opts.AgentsDir)
	}
	ds.Sort()
	if ds.HasErrors() {
		return nil, ds, cfg
	}
	return p, ds, cfg
}

// compileAgents compiles in with the named agents alone, given what
// loading (lds) and compiling the whole (cds) found: the diagnostics of
// another agent's file become warnings that name it; the deployment's and
// the named agents' are the second compilation's, as errors.
func compileAgents(in compile.Input, lds, cds diag.Diagnostics, agents []string, dir string) (*plan.Plan, diag.Diagnostics) {
	var ds diag.Diagnostics
	for i, d := range append(slices.Clone(lds), cds...) {
		switch name := otherAgent(d, agents, dir); {
		case name != "":
			if d.Severity == diag.SeverityError {
				d.Severity = diag.SeverityWarning
				d.Summary = fmt.Sprintf("agent %s is left out of this command: %s", name, d.Summary)
				ds = append(ds, d)
			}
		case i < len(lds):
			ds = append(ds, d) // loading's, of the deployment or a named agent; compiling again finds the rest
		}
	}
	cfg := *in.Config
	cfg.Artifacts = slices.DeleteFunc(slices.Clone(cfg.Artifacts), func(a *config.Artifact) bool {
		return !slices.Contains(agents, a.Name)
	})
	in.Config = &cfg
	p, more := compile.Compile(in)
	return p, append(ds, more...)
}

// otherAgent is the agent whose file d is about, when that is an agent
// of dir other than the named ones; "" otherwise.
func otherAgent(d diag.Diagnostic, agents []string, dir string) string {
	if d.Range == nil || d.Range.File == "" {
		return ""
	}
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(d.Range.File))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	name, _, ok := strings.Cut(filepath.ToSlash(rel), "/")
	if !ok || slices.Contains(agents, name) {
		return ""
	}
	return name
}

// agentNames returns the names of the agents in the agents directory (of
// the example, when the command reads it): its subdirectories holding an
// agent.yaml, sorted. It is nil when the directory cannot be read.
func (e *invocation) agentNames() []string {
	opts := e.options()
	readDir, stat := os.ReadDir, os.Stat
	if opts.FS != nil {
		clean := func(name string) string { return path.Clean(filepath.ToSlash(name)) }
		readDir = func(name string) ([]fs.DirEntry, error) { return fs.ReadDir(opts.FS, clean(name)) }
		stat = func(name string) (fs.FileInfo, error) { return fs.Stat(opts.FS, clean(name)) }
	}
	entries, err := readDir(opts.AgentsDir)
	if err != nil {
		return nil
	}
	var names []string
	for _, d := range entries {
		if !d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			continue
		}
		if _, err := stat(filepath.Join(opts.AgentsDir, d.Name(), "agent.yaml")); err == nil {
			names = append(names, d.Name())
		}
	}
	return names
}

// usecaseKeys returns the use cases registered in this process: none in the
// stock command, an application's own in its worker.
func usecaseKeys() []string { return usecase.Keys() }

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
