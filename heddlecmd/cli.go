package heddlecmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/usecase"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
)

const usage = `heddle gives AI agents their capabilities declaratively.

Usage:
  heddle [global flags] <command> [arguments]

Commands:
  check      load and compile the configuration; no network, no secret values
  plan       print the compiled plan as JSON; secrets appear as references
  tools      AGENT: open the runtime and print the agent's tools
  call       AGENT TOOL [--args JSON] [--as SUBJECT] [--role R]... [--claim K=V]... [--yes]:
             one call through the agent's grants and policies, as a caller
  health     open the runtime and print the dependency report (as /readyz)
  serve      [--listen ADDR]: run the runtime with /livez, /readyz and the invoke API
  lock       write heddle.lock: pinned tool definitions; later runs refuse changed tools
  version    print version and build information

Global flags:
  --config FILE    deployment file (default config/api.yaml)
  --env NAME       overlay config/api.NAME.yaml
  --agents DIR     agent artifacts (default agents)
  --format FORMAT  text or json (default text)
`

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
	fs.StringVar(&g.format, "format", g.format, "output format: text or json")
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

// env is one invocation's surroundings.
type env struct {
	stdout, stderr io.Writer
	g              globals
	environ        []string
	flags          *flag.FlagSet // the command's, once parsed
	onCall         func(runtime.CallEvent)
	example        fs.FS            // Options.Example
	kinds          *grants.Set      // Options.Kinds' config halves
	live           *runtime.KindSet // and their live halves
}

func mainEnv(e *env, args []string) int {
	stdout, stderr := e.stdout, e.stderr
	fs := e.flagSet("heddle")
	rest, err := parse(fs, args, 1)
	if err != nil {
		return e.usageError(err)
	}
	e.g.noteSet(fs)
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	cmd, cmdArgs := rest[0], rest[1:]
	switch cmd {
	case "check":
		return e.check(cmdArgs)
	case "plan":
		return e.plan(cmdArgs)
	case "version":
		return e.version(cmdArgs)
	case "tools":
		return e.tools(cmdArgs)
	case "call":
		return e.call(cmdArgs)
	case "health":
		return e.health(cmdArgs)
	case "serve":
		return e.serve(cmdArgs)
	case "lock":
		return e.lock(cmdArgs)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	}
	return e.usageError(fmt.Errorf("unknown command %q", cmd))
}

func (e *env) flagSet(name string) *flag.FlagSet {
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

func (e *env) usageError(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(e.stdout, usage)
		return ExitOK
	}
	fmt.Fprintf(e.stderr, "heddle: %v\nRun 'heddle help' for usage.\n", err)
	return ExitUsage
}

// parseCommand parses one command's arguments, with the global flags, and
// checks the number of positional arguments.
func (e *env) parseCommand(name string, args []string, min, max int, extra func(*flag.FlagSet)) ([]string, error) {
	fs := e.flagSet(name)
	if extra != nil {
		extra(fs)
	}
	pos, err := parse(fs, args, 0)
	if err != nil {
		return nil, err
	}
	e.flags = fs
	e.g.noteSet(fs)
	if e.g.format != "text" && e.g.format != "json" {
		return nil, fmt.Errorf("unknown --format %q: want text or json", e.g.format)
	}
	if len(pos) < min || (max >= 0 && len(pos) > max) {
		return nil, fmt.Errorf("%s: wrong number of arguments", name)
	}
	return pos, nil
}

// options says where configuration is read from: the files named, or the
// example (Options.Example), when there is one, no --config was given and the
// default is absent.
func (e *env) options() config.Options {
	opts := config.Options{ConfigFile: e.g.config, Env: e.g.env, AgentsDir: e.g.agents, Environ: e.environ}
	if !e.g.configSet && e.example != nil {
		if _, err := os.Stat(e.g.config); errors.Is(err, fs.ErrNotExist) {
			opts.FS = e.example
			if !e.g.agentsSet {
				opts.AgentsDir = "agents"
			}
		}
	}
	return opts
}

// compile loads and compiles the configuration.
func (e *env) compile() (*plan.Plan, diag.Diagnostics) {
	cfg, ds := config.Load(e.options())
	p, cds := compile.Compile(compile.Input{Config: cfg, Kinds: e.kinds, Usecases: usecaseKeys()})
	ds = append(ds, cds...)
	ds.Sort()
	if ds.HasErrors() {
		return nil, ds
	}
	return p, ds
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
