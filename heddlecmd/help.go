package heddlecmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// command describes one command for its usage, its help and shell
// completion. Its flags are not listed here: they are the ones its own
// function defines, read by asking it for its flag set (commandFlags).
type command struct {
	name    string
	args    []argument
	summary string   // one line: what it does
	exit    string   // its exit statuses
	example string   // one command line, without the leading "heddle"
	formats []string // the values of --format; nil means text and json
	hidden  bool     // left out of usage and completion
}

// argument is one positional argument of a command.
type argument struct {
	name     string // as usage shows it: AGENT
	meaning  string
	optional bool
}

// formats are the values of --format every command takes.
var formats = []string{"text", "json"}

// logLevels are the values of --log-level.
var logLevels = []string{"debug", "info", "warn", "error"}

// logFormats are the values of --log-format.
var logFormats = []string{"text", "json"}

// shells are the shells completion writes a script for.
var shells = []string{"bash", "zsh", "fish"}

var agentArg = argument{name: "AGENT", meaning: "an agent: a directory of --agents holding an agent.yaml"}

// commands are the commands, in the order usage lists them.
var commands = []command{
	{name: "check", summary: "load and compile the configuration; no network, no secret values needed",
		exit: "0 no errors (warnings allowed); 1 errors; 2 usage", example: "check --env staging --format json"},
	{name: "plan", summary: "print the compiled plan as JSON; secrets appear as references",
		exit: "as check", example: "plan --env staging > staging.json"},
	{name: "tools", args: []argument{agentArg}, summary: "open the runtime for the agent and print its tools, or a model API's tool definitions of them",
		exit: "0; 1 a coded failure; 2 usage", example: "tools incident-triage --format openai-chat --strict", formats: toolFormats},
	{name: "call", args: []argument{agentArg, {name: "TOOL", meaning: "one of the agent's tools, as heddle tools lists it: bare, server__tool or server.tool"}},
		summary: "one call through the agent's grants and policies, as a caller",
		exit:    "0 ok; 1 a refusal, a tool error or a coded failure; 2 usage",
		example: `call incident-triage get_runbook --args '{"id": "disk-full"}' --as alice --role sre`},
	{name: "health", args: []argument{{name: "AGENT", meaning: "an agent of the agents directory: only its dependencies are opened and reported, and another agent's errors are warnings", optional: true}},
		summary: "open the runtime and print the dependency report (what /readyz serves)",
		exit:    "0 ready; 1 not ready, or start-up failed; 2 usage", example: "health --format json"},
	{name: "serve", summary: "run the runtime: /livez, /readyz, /metrics and the invoke API",
		exit:    "runs until SIGINT or SIGTERM, drains for --grace (a second signal ends the drain), then 0; 1 when the drain cut calls, or start-up or listening fails; 2 usage; SIGHUP (and, with --watch, a changed file) reloads the configuration",
		example: "serve --listen 0.0.0.0:8080 --log-level info --watch"},
	{name: "mcp", args: []argument{agentArg}, summary: "serve the agent's tools as an MCP server on stdin and stdout, for an agent host",
		exit:    "runs until the host closes stdin (or SIGINT or SIGTERM), then 0; 1 start-up failed; 2 usage. Logs and failures go to stderr: stdout is the protocol",
		example: "mcp incident-triage --log-level info"},
	{name: "lock", summary: "write heddle.lock: pinned tool definitions; later runs refuse changed tools (--check: print the drift, write nothing)",
		exit: "0; 1 a coded failure, or drift with --check; 2 usage", example: "lock --check --lock deploy/heddle.lock"},
	{name: "import", args: []argument{{name: "FILE", meaning: "an MCP host's server list: claude_desktop_config.json, .cursor/mcp.json, .mcp.json or .vscode/mcp.json"}},
		summary: "print an MCP host's servers as ai.mcp_servers entries; credentials become secret references, listed on stderr to store",
		exit:    "0; 1 the file cannot be read or converted (a coded error); 2 usage", example: "import ~/.cursor/mcp.json >> servers.yaml"},
	{name: "audit", args: []argument{{name: "verify", meaning: "the command: check the chain of the files"}, {name: "FILE…", meaning: "audit files, the oldest rotated one first"}},
		summary: "check an audit file's chain: exit 1 naming the first record changed, removed, reordered or added without the key",
		exit:    "0 intact; 1 names the first broken record (AUDIT_CHAIN_BROKEN), or a coded failure; 2 usage", example: "audit verify /var/log/heddle/audit.jsonl.1 /var/log/heddle/audit.jsonl"},
	{name: "version", summary: "print the version, the VCS revision and the build information",
		exit: "0", example: "version --format json"},
	{name: "help", args: []argument{{name: "COMMAND", meaning: "a command; without one, the usage of them all", optional: true}},
		summary: "print the usage of a command: its arguments, flags with defaults, an example",
		exit:    "0; 2 an unknown command", example: "help call"},
	{name: "completion", args: []argument{{name: "SHELL", meaning: "bash, zsh or fish"}},
		summary: "print a shell completion script: commands, flags, agents and tools",
		exit:    "0; 2 an unknown shell", example: "completion bash > /etc/bash_completion.d/heddle"},
	{name: completeCommand, hidden: true},
}

// lookupCommand returns the command called name.
func lookupCommand(name string) (command, bool) {
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
	if i < 0 {
		return command{}, false
	}
	return commands[i], true
}

// commandNames returns the names of the commands usage lists.
func commandNames() []string {
	var names []string
	for _, c := range commands {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	return names
}

func unknownCommand(name string) error {
	return &unknownError{problem: fmt.Sprintf("unknown command %q", name), got: name, label: "commands", valid: commandNames()}
}

// formatsOf returns the values of the command's --format.
func formatsOf(name string) []string {
	if c, ok := lookupCommand(name); ok && c.formats != nil {
		return c.formats
	}
	return formats
}

// usageLine is the command with its arguments: "call AGENT TOOL".
func (c command) usageLine() string {
	s := c.name
	for _, a := range c.args {
		if a.optional {
			s += " [" + a.name + "]"
		} else {
			s += " " + a.name
		}
	}
	return s
}

// errHelpShown is returned by parseCommand once it has printed a command's
// help (for -h or --help); usageError turns it into exit 0.
var errHelpShown = errors.New("help shown")

// globalFlag reports whether name is one of the flags every command takes.
func globalFlag(name string) bool {
	switch name {
	case "config", "env", "agents", "format":
		return true
	}
	return false
}

// metavars name the value of each flag in usage.
var metavars = map[string]string{
	"config": "FILE", "env": "NAME", "agents": "DIR", "format": "FORMAT",
	"log-level": "LEVEL", "log-format": "FORMAT", "lock": "FILE", "args": "JSON", "as": "SUBJECT",
	"role": "ROLE", "claim": "NAME=VALUE", "listen": "ADDR", "grace": "DURATION",
}

// flagLine is a flag with its value's name: "--lock FILE", "--yes".
func flagLine(f *flag.Flag) string {
	if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
		return "--" + f.Name
	}
	mv := metavars[f.Name]
	if mv == "" {
		name, _ := flag.UnquoteUsage(f)
		mv = strings.ToUpper(name)
	}
	if mv == "" {
		mv = "VALUE"
	}
	return "--" + f.Name + " " + mv
}

// flagUsage is a flag's meaning with its default, when it has one.
func flagUsage(f *flag.Flag) string {
	_, u := flag.UnquoteUsage(f)
	switch f.DefValue {
	case "", "false":
		return u
	}
	return fmt.Sprintf("%s (default %s)", u, f.DefValue)
}

// commandFlags returns the flag set of the command called name, as the
// command itself defines it: the command is run with -h on an env that
// only records its flag set.
func (e *invocation) commandFlags(name string) *flag.FlagSet {
	probe := &invocation{stdout: io.Discard, stderr: io.Discard, g: defaultGlobals(), probe: true}
	probe.dispatch(name, []string{"-h"})
	if probe.flags == nil {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		probe.g.register(fs)
		return fs
	}
	return probe.flags
}

// flagNames returns the flags of fs as typed: "--agents", "--config", ….
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	return names
}

// printCommandHelp writes the help of one command: what it does, its
// arguments, its flags and the global ones with their defaults, its exit
// statuses and an example.
func (e *invocation) printCommandHelp(w io.Writer, c command) {
	fmt.Fprintf(w, "heddle %s: %s.\n\nUsage:\n  heddle %s [flags]\n", c.name, c.summary, c.usageLine())
	if len(c.args) > 0 {
		fmt.Fprintln(w, "\nArguments:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, a := range c.args {
			fmt.Fprintf(tw, "  %s\t%s\n", a.name, a.meaning)
		}
		_ = tw.Flush()
	}
	var own, global []*flag.Flag
	e.commandFlags(c.name).VisitAll(func(f *flag.Flag) {
		if globalFlag(f.Name) {
			global = append(global, f)
		} else {
			own = append(own, f)
		}
	})
	if len(own) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		printFlags(w, own, c.name)
	}
	fmt.Fprintln(w, "\nGlobal flags (every command takes them, before or after it):")
	printFlags(w, global, c.name)
	fmt.Fprintf(w, "\nExit status: %s.\n\nExample:\n  heddle %s\n", c.exit, c.example)
}

// printFlags writes one line per flag: the flag, its meaning and default,
// and the values it takes when they are enumerated.
func printFlags(w io.Writer, fs []*flag.Flag, cmd string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range fs {
		u := flagUsage(f)
		if vs := flagValues(cmd, f.Name); vs != nil && !mentionsAll(u, vs) {
			u += "; one of " + strings.Join(vs, ", ")
		}
		fmt.Fprintf(tw, "  %s\t%s\n", flagLine(f), u)
	}
	_ = tw.Flush()
}

// mentionsAll reports whether s names every one of values.
func mentionsAll(s string, values []string) bool {
	for _, v := range values {
		if !strings.Contains(s, v) {
			return false
		}
	}
	return true
}

// flagValues returns the values an enumerated flag of cmd takes, or nil.
func flagValues(cmd, flagName string) []string {
	switch flagName {
	case "format":
		return formatsOf(cmd)
	case "log-level":
		return logLevels
	case "log-format":
		return logFormats
	}
	return nil
}

// printUsage writes the general usage: every command, and every flag with
// the commands that take it.
func (e *invocation) printUsage(w io.Writer) {
	fmt.Fprint(w, "heddle gives AI agents their capabilities declaratively.\n\n")
	fmt.Fprint(w, "Usage:\n  heddle [global flags] <command> [arguments] [flags]\n  heddle help <command>\n\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commands {
		if !c.hidden {
			fmt.Fprintf(tw, "  %s\t%s\n", c.usageLine(), c.summary)
		}
	}
	_ = tw.Flush()

	// Group the commands' own flags by the commands that take them.
	type group struct {
		cmds  []string
		flags []*flag.Flag
	}
	var globals []*flag.Flag
	gfs := flag.NewFlagSet("heddle", flag.ContinueOnError)
	g := defaultGlobals()
	g.register(gfs)
	gfs.VisitAll(func(f *flag.Flag) { globals = append(globals, f) })
	takers := map[string][]string{} // flag → commands
	byName := map[string]*flag.Flag{}
	var order []string
	for _, c := range commands {
		if c.hidden {
			continue
		}
		e.commandFlags(c.name).VisitAll(func(f *flag.Flag) {
			if globalFlag(f.Name) {
				return
			}
			if _, ok := byName[f.Name]; !ok {
				byName[f.Name] = f
				order = append(order, f.Name)
			}
			takers[f.Name] = append(takers[f.Name], c.name)
		})
	}
	var groups []*group
	for _, name := range order {
		cmds := takers[name]
		i := slices.IndexFunc(groups, func(g *group) bool { return slices.Equal(g.cmds, cmds) })
		if i < 0 {
			groups = append(groups, &group{cmds: cmds})
			i = len(groups) - 1
		}
		groups[i].flags = append(groups[i].flags, byName[name])
	}
	fmt.Fprintln(w, "\nGlobal flags (every command takes them, before or after it):")
	printFlags(w, globals, "")
	for _, g := range groups {
		fmt.Fprintf(w, "\nFlags of %s:\n", andList(g.cmds))
		printFlags(w, g.flags, g.cmds[0])
	}
	fmt.Fprint(w, "\nRun 'heddle help <command>' for a command's arguments, flags and an example.\n")
}

// andList joins names as prose: "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// help is heddle help [COMMAND].
func (e *invocation) help(args []string) int {
	pos, err := e.parseCommand("help", args, 0, 1, nil)
	if err != nil {
		return e.usageError(err)
	}
	if len(pos) == 0 {
		e.printUsage(e.stdout)
		return ExitOK
	}
	c, ok := lookupCommand(pos[0])
	if !ok || c.hidden {
		e.cmd = ""
		return e.usageError(unknownCommand(pos[0]))
	}
	e.printCommandHelp(e.stdout, c)
	return ExitOK
}
