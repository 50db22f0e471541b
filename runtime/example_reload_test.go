package runtime_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/usecase"
)

// compileAgents compiles a configuration of agents granting the one
// operation example.ping.
func compileAgents(agents ...string) *plan.Plan {
	fs := fstest.MapFS{"config/api.yaml": {Data: []byte("ai: {}\n")}}
	for _, a := range agents {
		fs["agents/"+a+"/agent.yaml"] = &fstest.MapFile{Data: []byte("capabilities: [{kind: usecase, keys: [example.ping]}]\n")}
	}
	cfg, _ := config.Load(config.Options{FS: fs})
	p, _ := compile.Compile(compile.Input{Config: cfg, Usecases: usecase.Keys()})
	return p
}

// A worker that reloads its configuration holds its runtimes in
// Generations: each request takes the current one and gives it back, and
// a reload opens the new plan from the live runtime (keeping what did not
// change) and swaps it in; the old one closes when its last request ends.
func ExampleGenerations() {
	usecase.Register("example.ping", func(context.Context, struct{}) (string, error) { return "pong", nil },
		usecase.Description("Answer pong."), usecase.ReadOnly())
	ctx := context.Background()
	first, err := runtime.Open(ctx, compileAgents("a"), runtime.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	gens := runtime.NewGenerations(first)
	defer gens.Close()

	// A request: on the generation current when it began, to its end.
	rt, release := gens.Acquire()
	_, err = rt.Toolset("b")
	fmt.Println("generation", gens.Generation(), "agent b:", err != nil)
	release()

	// A reload.
	next, err := runtime.Reopen(ctx, compileAgents("a", "b"), runtime.Options{}, gens.Current())
	if err != nil {
		fmt.Println("reload failed; generation", gens.Generation(), "goes on serving:", err)
		return
	}
	gens.Swap(next)

	rt, release = gens.Acquire()
	defer release()
	ts, err := rt.Toolset("b")
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := ts.Call(ctx, "example.ping", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("generation", gens.Generation(), "agent b:", res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// generation 1 agent b: true
	// generation 2 agent b: "pong"
}
