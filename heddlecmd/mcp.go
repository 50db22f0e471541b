package heddlecmd

import (
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/mcpfacade"
)

// mcpServe serves one agent's toolset as an MCP server on standard input
// and output, for a host that starts heddle as its stdio server (claude mcp
// add heddle -- heddle mcp AGENT), until the host closes standard input or
// a signal ends it: then 0. Standard output is the protocol's alone, so
// start-up failures and logs go to standard error whatever --format says;
// a start-up failure also answers the host's requests, since hosts
// hide a server's standard error (answerFailure).
// Every call is made for the deployment's mcp.identity.
func (e *invocation) mcpServe(args []string) int {
	var rf runFlags
	pos, err := e.parseCommand("mcp", args, 1, 1, rf.register)
	if err != nil {
		return e.usageError(err)
	}
	e.g.format = "text" // failures on stderr: stdout is the protocol
	log, err := rf.logger(e)
	if err != nil {
		return e.usageError(err)
	}
	sig := watchSignals()
	defer sig.stop()
	ctx := sig.first
	rt, ts, err := e.tryOpenAgent(ctx, &rf, log, false, pos[0])
	if err != nil {
		e.printFailure(err)
		answerFailure(ctx, e.stdinReader(), e.stdout, err)
		return ExitFail
	}
	defer rt.Close()
	var caller heddle.Identity
	if id := rt.Plan().MCP.Identity; id != nil {
		caller = heddle.Identity{Subject: id.Subject, Roles: id.Roles, Claims: id.Claims}
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(e.stdinReader()), Writer: nopWriteCloser{e.stdout}}
	err = mcpfacade.Serve(ctx, ts.NewView(), t, &mcpfacade.Options{Agent: pos[0], Caller: caller, Watch: rt.Watch, Version: Version, Logger: log})
	if err != nil {
		e.printFailure(err)
		return ExitFail
	}
	return ExitOK
}

// stdinReader is the command's standard input: the process's unless a
// test gave another.
func (e *invocation) stdinReader() io.Reader {
	if e.stdin != nil {
		return e.stdin
	}
	return emptyReader{}
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, io.EOF }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
