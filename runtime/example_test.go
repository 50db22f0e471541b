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
	"github.com/heddlehq/heddle/runtime/driver"
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
		fmt.Println(t.Name, t.Kind, t.ReadOnly)
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

// A grant that says defer keeps its tools out of what a conversation's
// model is given: the model finds them with search_tools and adds them to
// its own conversation's view with load_tools. Another conversation sees
// none of what this one loaded.
func ExampleToolset_NewView() {
	usecase.Register("example.restart_service", func(ctx context.Context, in greeting) (string, error) {
		return "restarted " + in.Name, nil
	}, usecase.Description("Restarts a service, one instance at a time."))
	cfg, _ := config.Load(config.Options{FS: fstest.MapFS{
		"config/api.yaml":       {Data: []byte("ai: {}\n")},
		"agents/ops/agent.yaml": {Data: []byte("capabilities: [{kind: usecase, keys: [example.restart_service], defer: true}]\npolicies: {approval: allow}\n")},
	}})
	p, _ := compile.Compile(compile.Input{Config: cfg, Usecases: usecase.Keys()})
	rt, err := runtime.Open(context.Background(), p, runtime.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	ts, _ := rt.Toolset("ops")
	ctx := heddle.WithCaller(context.Background(), heddle.Identity{Subject: "alice"})

	conv := ts.NewView()
	names := func(v *runtime.View) []string {
		tools, _ := v.Tools(ctx)
		var out []string
		for _, t := range tools {
			out = append(out, t.Name)
		}
		return out
	}
	fmt.Println(names(conv))
	res, _ := conv.Call(ctx, runtime.SearchToolsName, map[string]any{"query": "restart a service"})
	fmt.Println(text(res))
	res, _ = conv.Call(ctx, "example_restart_service", map[string]any{"name": "api"})
	fmt.Println(runtime.RefusalCode(res))
	_, _ = conv.Call(ctx, runtime.LoadToolsName, map[string]any{"names": []any{"example_restart_service"}})
	res, _ = conv.Call(ctx, "example_restart_service", map[string]any{"name": "api"})
	fmt.Println(text(res))
	fmt.Println(names(conv))
	fmt.Println(names(ts.NewView()))
	// Output:
	// [load_tools search_tools]
	// {"tools":[{"name":"example_restart_service","description":"Restarts a service, one instance at a time."}]}
	// TOOL_UNKNOWN
	// "restarted api"
	// [example_restart_service load_tools search_tools]
	// [load_tools search_tools]
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
		c := driver.ClassifyAnnotations(&mcp.Tool{Name: "t", Annotations: a})
		fmt.Println(c.Destructive, c.ReadOnly, c.By)
	}
	// Output:
	// false false server
	// false true server
	// true false server
	// true false server
}
