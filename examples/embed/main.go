// Command embed is an application that embeds heddle: it registers its own
// operations as use cases, compiles the shipped example deployment with an
// agent of its own, opens the runtime and calls the agent's tools as two
// different callers — what an HTTP handler of the application does once it
// has authenticated a request.
//
//	go run ./examples/embed
//
// It needs no network and no other process: its agent grants only use cases
// (incidents.* from examples/incidents, and desk.whoami registered below).
package main

import (
	"context"
	"embed"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds, both halves

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	// The live half of kind: usecase tells the runtime which MCP servers
	// the operations reach directly.

	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/usecase"

	// The application's operations register themselves when imported.
	_ "github.com/heddlehq/heddle/examples/incidents"
)

// agents holds the application's agent artifacts.
//
//go:embed agents
var agents embed.FS

// WhoAmI is the output of desk.whoami.
type WhoAmI struct {
	Subject string   `json:"subject"`
	Roles   []string `json:"roles"`
	Tenant  string   `json:"tenant"`
}

func main() {
	register()
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

// register registers the application's own operation. Operations may be
// registered in init functions (as examples/incidents does) or in main,
// before compiling.
func register() {
	usecase.Register("desk.whoami", func(ctx context.Context, _ struct{}) (WhoAmI, error) {
		c := heddle.Caller(ctx)
		return WhoAmI{Subject: c.Subject, Roles: c.Roles, Tenant: c.Claims["tenant"]}, nil
	}, usecase.Description("Say who the agent is acting for."), usecase.ReadOnly())
}

// run compiles, opens and calls, printing to w.
func run(ctx context.Context, w io.Writer) error {
	// The deployment is the repository's example (embedded in package
	// heddle); the agents are this application's.
	dep, ds := config.LoadDeployment(config.Options{FS: heddle.Example})
	arts, ads := config.LoadArtifacts(config.Options{FS: agents})
	p, cds := compile.Compile(compile.Input{
		Config:   &config.Config{Deployment: dep, Artifacts: arts},
		Usecases: usecase.Keys(), // every operation this binary registered
	})
	if ds = append(append(ds, ads...), cds...); ds.HasErrors() {
		return ds.Err()
	}

	rt, err := runtime.Open(ctx, p, runtime.Options{
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		// Destructive tools need approval (policies.approval: ask); a real
		// application asks a human. This one approves and says so.
		Approver: func(_ context.Context, req runtime.ApprovalRequest) (bool, error) {
			fmt.Fprintf(w, "  (approving %s for %s)\n", req.Tool.Name, req.Caller.Subject)
			return true, nil
		},
	})
	if err != nil {
		return err
	}
	defer rt.Close()

	ts, err := rt.Toolset("incident-desk")
	if err != nil {
		return err
	}
	tools, err := ts.Tools(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "tools of incident-desk:")
	for _, t := range tools {
		fmt.Fprintf(w, "  %-24s %s\n", t.Name, t.Description)
	}

	// Each request carries its caller, authenticated by the application's
	// front door; heddle.WithCaller puts it on the context.
	alice := heddle.WithCaller(ctx, heddle.Identity{Subject: "alice", Roles: []string{"sre"}, Claims: map[string]string{"tenant": "acme"}})
	bob := heddle.WithCaller(ctx, heddle.Identity{Subject: "bob", Claims: map[string]string{"tenant": "globex"}})

	for _, c := range []struct {
		who  string
		ctx  context.Context
		tool string
		args map[string]any
	}{
		{"alice", alice, "desk_whoami", nil},
		{"alice", alice, "incidents_get_incident", map[string]any{"id": "INC-1"}},
		{"bob", bob, "incidents_get_incident", map[string]any{"id": "INC-1"}},
		{"bob", bob, "incidents_close_incident", map[string]any{"id": "INC-3", "resolution": "restarted the login service"}},
		{"alice", alice, "incidents_close_incident", map[string]any{"id": "INC-1", "resolution": "rotated the logs"}},
	} {
		fmt.Fprintf(w, "%s calls %s:\n", c.who, c.tool)
		res, err := ts.Call(c.ctx, c.tool, c.args)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s\n", describe(res))
	}
	return nil
}

// describe prints a result in one line: its text, marked when it is an
// error or a refusal.
func describe(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	switch {
	case runtime.RefusalCode(res) != "":
		return "refused: " + b.String()
	case res.IsError:
		return "error: " + b.String()
	}
	return b.String()
}
