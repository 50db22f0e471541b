// Command heddle-testmcp is heddle's MCP test server: a configurable server
// with echoing tools and injectable faults, for tests of heddle's runtime and
// of MCP clients in general. It is a thin wrapper around internal/testmcp,
// whose Options document every flag.
//
// Usage:
//
//	heddle-testmcp [--transport stdio|http] [--listen 127.0.0.1:0] [flags…]
//
// Over stdio (the default) stdout is the protocol channel and logs go to
// stderr. Over http the server listens on 127.0.0.1 only, serves Streamable
// HTTP at /mcp and SSE at /sse, and prints one line on stdout,
// "listening on http://127.0.0.1:PORT", once it accepts connections.
//
// For example, a server with 50 tools listed two per page, whose third tool
// call kills it with status 3:
//
//	heddle-testmcp --num-tools 50 --page-size 2 --crash-after 2
//
// Exit status: 0 after a clean shutdown (stdin closed, SIGINT or SIGTERM), 1
// on a serving error, 2 on a usage error, 3 for --crash-after.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/heddlehq/heddle/internal/testmcp"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run serves as the command line asks and returns the exit status.
func run(args []string, stderr io.Writer) int {
	// The hidden mode of the spawn_child grandchild.
	if len(args) == 1 && args[0] == testmcp.SleepForeverArg {
		testmcp.SleepForever()
		return 0
	}

	fs := flag.NewFlagSet("heddle-testmcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	transport := fs.String("transport", "stdio", "`stdio` or http")
	listen := fs.String("listen", "127.0.0.1:0", "http: listen `address` (127.0.0.1 only; port 0 picks one)")
	opts := testmcp.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: heddle-testmcp [--transport stdio|http] [--listen 127.0.0.1:0] [flags…]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "heddle-testmcp: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	opts.Logger = slog.New(slog.NewTextHandler(stderr, nil)).With("server", opts.Name)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	switch *transport {
	case "stdio":
		err = testmcp.ServeStdio(ctx, opts)
	case "http":
		err = testmcp.ListenAndServe(ctx, *listen, opts)
	default:
		fmt.Fprintf(stderr, "heddle-testmcp: --transport must be stdio or http, not %q\n", *transport)
		return 2
	}
	if err != nil && ctx.Err() == nil {
		opts.Logger.Error("serving failed", "err", err)
		return 1
	}
	return 0
}
