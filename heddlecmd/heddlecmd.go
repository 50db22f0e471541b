// Package heddlecmd is the heddle command as a library: the subcommands
// (check, plan, tools, call, health, serve, mcp, lock, version, help,
// completion), their flags, their output and their exit codes. The stock
// binary, cmd/heddle, is nothing but a call to Main; an application builds
// its own worker the same way, after registering its own operations as use
// cases, so that its agents' usecase grants compile and run:
//
//	// Command desk-worker is the heddle command with the desk's operations.
//	package main
//
//	import (
//		"context"
//
//		"github.com/heddlehq/heddle"
//		"github.com/heddlehq/heddle/heddlecmd"
//		"github.com/heddlehq/heddle/usecase"
//	)
//
//	type Who struct {
//		Subject string `json:"subject"`
//	}
//
//	func main() {
//		usecase.Register("desk.whoami", func(ctx context.Context, _ struct{}) (Who, error) {
//			return Who{Subject: heddle.Caller(ctx).Subject}, nil
//		}, usecase.Description("Say who the agent is acting for."), usecase.ReadOnly())
//		heddlecmd.Main()
//	}
//
// Built with go build, it is run exactly as heddle is (desk-worker check,
// desk-worker call AGENT desk_whoami --as alice); an artifact granting
// {kind: usecase, keys: [desk.whoami]} compiles against it, and against the
// stock binary, which registers no operation, fails check with
// USECASE_UNKNOWN. docs/embedding.md walks through it.
//
// Its command line is a contract that scripts depend on: commands, flags,
// output formats and exit codes change only by addition.
//
// Exit codes: 0 success; 1 a coded failure (configuration errors, a failed
// call); 2 a usage error.
package heddlecmd

import (
	"io"
	"io/fs"
	"os"

	"github.com/heddlehq/heddle/builtin"
)

// Options configure one run of the command beyond its command line. The zero
// value is the stock heddle command.
type Options struct {
	// Example is the configuration read when --config is not given and
	// ./config/api.yaml does not exist: a file system holding
	// config/api.yaml and, unless --agents is given, the artifacts under
	// agents/ (heddle.Example is the shipped one). The default, nil, means
	// none: the command reads ./config/api.yaml and reports it missing.
	Example fs.FS
	// Kinds are the capability kinds the command compiles and opens, both
	// halves of each. The default, nil, is builtin.Default(): an
	// application with a kind of its own passes
	// builtin.Default().With(builtin.Kind{Config: …, Live: …}).
	Kinds *builtin.Set
}

// Main runs the command with the program's arguments (os.Args) on the
// process's standard output and error, with the zero Options, and exits the
// process with the command's exit code. An application's main calls it after
// registering its operations; it does not return.
func Main() {
	os.Exit(Run(os.Args[1:], os.Stdout, os.Stderr, Options{}))
}

// Run runs the command with args (without the program name), writing to
// stdout and stderr, and returns its exit code: ExitOK, ExitFail or
// ExitUsage. It reads the process's environment (HEDDLE_* variables, secret
// references), for serve and mcp its signals, and for mcp its standard
// input (the MCP protocol, with stdout). Tests and applications with wiring
// of their own call it instead of Main.
func Run(args []string, stdout, stderr io.Writer, opts Options) int {
	kinds := opts.Kinds
	if kinds == nil {
		kinds = builtin.Default()
	}
	return mainEnv(&invocation{stdout: stdout, stderr: stderr, stdin: os.Stdin, environ: os.Environ(), g: defaultGlobals(),
		example: opts.Example, kinds: kinds.Grants(), set: kinds}, args)
}
