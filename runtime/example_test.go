package runtime_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"github.com/heddlehq/heddle"
	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds, both halves
	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/usecase"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type greeting struct {
	Name string `json:"name"`
}

// A worker opens a compiled plan once, under its start-up deadline, and
// hands each agent its toolset. Here the agent's one grant is an operation
// of the application itself, so the example needs no server.
func ExampleOpen() {
	usecase.Register("example.greet", func(ctx context.Context, in greeting) (string, error) {
		return fmt.Sprintf("hello %s, from %s", in.Name, heddle.Caller(ctx).Subject), nil
	}, usecase.Description("Greet someone."), usecase.ReadOnly())

	cfg, _ := config.Load(config.Options{FS: fstest.MapFS{
		"config/api.yaml":           {Data: []byte("ai: {}\n")},
		"agents/greeter/agent.yaml": {Data: []byte("capabilities: [{kind: usecase, keys: [example.greet]}]\n")},
	}})
	p, ds := compile.Compile(compile.Input{Config: cfg, Usecases: usecase.Keys()})
	if ds.HasErrors() {
		fmt.Println(ds.Err())
		return
	}
	rt, err := runtime.Open(context.Background(), p, runtime.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	ts, _ := rt.Toolset("greeter")
	tools, _ := ts.Tools(context.Background())
	for _, t := range tools {
		fmt.Println(t.Name, t.Source, t.ReadOnly)
	}
	fmt.Println(rt.Health().Ready)
	// Output:
	// example_greet usecase true
	// true
}

// A call runs as the caller the context carries, through the agent's
// policies; the model reads the result, or a refusal with its code.
func ExampleToolset_Call() {
	usecase.Register("example.greet_call", func(ctx context.Context, in greeting) (string, error) {
		return fmt.Sprintf("hello %s, from %s", in.Name, heddle.Caller(ctx).Subject), nil
	}, usecase.ReadOnly())
	cfg, _ := config.Load(config.Options{FS: fstest.MapFS{
		"config/api.yaml":           {Data: []byte("ai: {}\n")},
		"agents/greeter/agent.yaml": {Data: []byte("capabilities: [{kind: usecase, keys: [example.greet_call]}]\n")},
	}})
	p, _ := compile.Compile(compile.Input{Config: cfg, Usecases: usecase.Keys()})
	rt, err := runtime.Open(context.Background(), p, runtime.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	ts, _ := rt.Toolset("greeter")

	ctx := heddle.WithCaller(context.Background(), heddle.Identity{Subject: "alice"})
	res, _ := ts.Call(ctx, "example_greet_call", map[string]any{"name": "bob"})
	fmt.Println(text(res))

	res, _ = ts.Call(ctx, "example_greet_call", map[string]any{"name": 42})
	fmt.Println(res.IsError, runtime.RefusalCode(res))
	// Output:
	// "hello bob, from alice"
	// true TOOL_ARGS_INVALID
}

// ClassifyAnnotations applies MCP's rule to a tool's annotations:
// destructiveHint: true is destructive; without a destructiveHint,
// readOnlyHint: false is; a tool without annotations is not.
func ExampleClassifyAnnotations() {
	yes := true
	for _, a := range []*mcp.ToolAnnotations{
		nil,
		{ReadOnlyHint: true},
		{DestructiveHint: &yes},
		{Title: "decoded by go-sdk: readOnlyHint reads false"},
	} {
		c := runtime.ClassifyAnnotations(&mcp.Tool{Name: "t", Annotations: a})
		fmt.Println(c.Destructive, c.ReadOnly, c.By)
	}
	// Output:
	// false false server
	// false true server
	// true false server
	// true false server
}
