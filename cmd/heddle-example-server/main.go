// Command heddle-example-server is the MCP server behind heddle's shipped
// demo configuration (config/api.yaml). One binary plays two servers, chosen
// with --name, each backed by a small in-memory data set:
//
//   - runbooks: search_runbooks {query}, get_runbook {id} and
//     execute_runbook {id} (annotated destructive) over incident runbooks.
//     get_runbook and execute_runbook report the RUNBOOKS_REGION environment
//     variable, which the demo sets through the server's declared env.
//   - catalog: search_products {query} and get_product {id} (read-only) over
//     a product catalogue.
//
// Usage:
//
//	heddle-example-server --name runbooks|catalog [--tools a,b,…] [--transport stdio|http] [--listen ADDR]
//
// --tools serves only the named tools (default: all of the server's tools).
// Over stdio (the default) logs go to stderr. Over http it serves Streamable
// HTTP at /mcp on --listen (default 127.0.0.1:8090) and prints
// "listening on http://ADDR" on stdout; for example:
//
//	heddle-example-server --name catalog --transport http --listen 127.0.0.1:0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const version = "0.1.0"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// servers maps each --name to the function that adds its tools. add adds
// the tools whose names keep accepts.
var servers = map[string]struct {
	tools []string
	add   func(s *mcp.Server, keep func(string) bool)
}{
	"runbooks": {[]string{"search_runbooks", "get_runbook", "execute_runbook"}, addRunbookTools},
	"catalog":  {[]string{"search_products", "get_product"}, addCatalogTools},
}

// run serves as the command line asks and returns the exit status: 0 after
// a clean shutdown, 1 on a serving error, 2 on a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("heddle-example-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "which server to be: `runbooks` or catalog")
	tools := fs.String("tools", "", "comma-separated `names` of the tools to serve (default: all)")
	transport := fs.String("transport", "stdio", "`stdio` or http")
	listen := fs.String("listen", "127.0.0.1:8090", "http: listen `address`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "heddle-example-server: "+format+"\n", a...)
		fs.Usage()
		return 2
	}
	if fs.NArg() > 0 {
		return usage("unexpected argument %q", fs.Arg(0))
	}
	var keep []string
	if *tools != "" {
		keep = strings.Split(*tools, ",")
	}
	srv, err := newServer(*name, keep)
	if err != nil {
		return usage("%v", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil)).With("server", *name)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch *transport {
	case "stdio":
		err = srv.Run(ctx, &mcp.StdioTransport{})
	case "http":
		err = serveHTTP(ctx, srv, *listen, stdout, log)
	default:
		return usage("--transport must be stdio or http, not %q", *transport)
	}
	if err != nil && ctx.Err() == nil {
		log.Error("serving failed", "err", err)
		return 1
	}
	return 0
}

// newServer builds the named server with the tools in keep (all when keep
// is empty). An unknown server or tool name is an error that lists the
// known ones.
func newServer(name string, keep []string) (*mcp.Server, error) {
	def, ok := servers[name]
	if !ok {
		return nil, fmt.Errorf("--name must be runbooks or catalog, not %q", name)
	}
	for _, tool := range keep {
		if !slices.Contains(def.tools, tool) {
			return nil, fmt.Errorf("server %s has no tool %q (it has %s)", name, tool, strings.Join(def.tools, ", "))
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: version}, nil)
	def.add(s, func(tool string) bool { return len(keep) == 0 || slices.Contains(keep, tool) })
	return s, nil
}

// serveHTTP serves Streamable HTTP at /mcp on addr until ctx is done.
func serveHTTP(ctx context.Context, srv *mcp.Server, addr string, stdout io.Writer, log *slog.Logger) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	log.Info("listening", "url", "http://"+ln.Addr().String()+"/mcp")

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		hs.Close()
	}
	<-served
	return nil
}

// text returns a result holding one text part.
func text(format string, a ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, a...)}}}
}

// matches reports whether every word of query occurs in one of fields,
// ignoring case. An empty query matches everything.
func matches(query string, fields ...string) bool {
	haystack := strings.ToLower(strings.Join(fields, " "))
	for word := range strings.FieldsSeq(strings.ToLower(query)) {
		if !strings.Contains(haystack, word) {
			return false
		}
	}
	return true
}
