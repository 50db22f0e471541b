package driver_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
)

// shout is the live half of a kind whose every grant is one tool, shout,
// that answers its text in capitals. A real kind opens its dependencies in
// Open (under ctx, the start-up deadline), reports them in Status and
// brings them back with a driver.Supervisor; this one depends on nothing.
type shout struct {
	// Exclaim is one of the kind's own settings: a field of its Kind
	// value, set where the set of kinds is built, never in driver.Env.
	Exclaim bool
}

func (k shout) Open(ctx context.Context, env driver.Env) (driver.Instance, []*driver.Failure, error) {
	return &shoutInstance{exclaim: k.Exclaim}, nil, nil
}

type shoutInstance struct{ exclaim bool }

func (i *shoutInstance) Source(agent *plan.Agent, g plan.Grant) (driver.Source, error) {
	return &shoutSource{exclaim: i.exclaim}, nil
}
func (i *shoutInstance) Status() []driver.Dependency { return nil }
func (i *shoutInstance) Close() error                { return nil }

var shoutTool = &mcp.Tool{
	Name:        "shout",
	Description: "Says the text in capitals.",
	InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
	Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
}

type shoutSource struct{ exclaim bool }

func (s *shoutSource) Name() string { return "shout" }

// Tools never change, so the generation is always 1; a kind whose tools
// change tells the runtime through env.Events.
func (s *shoutSource) Tools(context.Context) ([]*mcp.Tool, uint64, error) {
	return []*mcp.Tool{shoutTool}, 1, nil
}

func (s *shoutSource) Call(ctx context.Context, t *mcp.Tool, args map[string]any, opts driver.CallOptions) (*mcp.CallToolResult, error) {
	text, _ := args["text"].(string)
	text = strings.ToUpper(text)
	if s.exclaim {
		text += "!"
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
}

var (
	_ driver.Kind     = shout{}
	_ driver.Instance = (*shoutInstance)(nil)
	_ driver.Source   = (*shoutSource)(nil)
)

// A kind's live half, opened by the runtime: the runtime names no kind, so
// a set of kinds maps the kind's name to it (package builtin pairs it with
// its config half, which the compiler uses to make the plan's grants).
func Example_kind() {
	p := &plan.Plan{
		Startup: plan.Startup{TimeoutMS: 1000},
		Agents: map[string]*plan.Agent{"loud": {
			Name:     "loud",
			Grants:   []plan.Grant{{Kind: "shout"}},
			Policies: plan.Policies{ToolTimeoutMS: 1000, Approval: "allow"},
		}},
	}
	kinds := runtime.NewKindSet(map[string]driver.Kind{"shout": shout{Exclaim: true}})
	rt, err := runtime.Open(context.Background(), p, runtime.Options{Kinds: kinds})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	ts, _ := rt.Toolset("loud")
	res, err := ts.Call(context.Background(), "shout", map[string]any{"text": "hello"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// HELLO!
}
