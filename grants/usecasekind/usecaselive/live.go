// Package usecaselive is the live half of the usecase capability kind: each key a
// grant names becomes one tool of the agent's toolset, which calls the
// application's registered operation (package usecase) in process, on the
// caller's context. There is no network and no MCP hop: the caller's
// identity (heddle.Caller) arrives in the operation as the toolset received
// it, after policy has been decided on it.
//
// The built-in set (package builtin) pairs it with the config half; an
// application that links builtin has it.
//
// The source of every usecase grant is named "usecase": a use case keeps its
// key as its tool name (dots made _) unless another source offers the same
// name, and then it is usecase__<key>.
//
// A call decodes the arguments strictly into the operation's input type,
// calls it, and encodes its output as structuredContent (when it is an
// object) and as JSON text. An error the operation returns becomes a result
// with isError set and the error's message; one carrying a diag code becomes
// a refusal with that code; a context error is left to the toolset (so a
// call past tool_timeout_ms is TOOL_TIMEOUT). A panic is recovered into an
// isError result that names only the use case, and is logged at ERROR with
// its value and stack.
package usecaselive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/usecasekind"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/usecase"
)

// KindName is the grant kind this package serves, and the name and prefix of
// every usecase source.
const KindName = "usecase"

// Kind is the live half of the usecase kind.
type Kind struct{}

// Open checks that every key the plan grants is registered in this build (a
// plan compiled by another build may name one this binary lacks); a missing
// one is USECASE_UNKNOWN and aborts start-up. There is nothing to connect.
func (Kind) Open(_ context.Context, env driver.Env) (driver.Instance, []*driver.Failure, error) {
	var errs []error
	for _, name := range sortedAgents(env.Plan) {
		a := env.Plan.Agents[name]
		for _, g := range a.Grants {
			if g.Kind != KindName {
				continue
			}
			spec, ok := g.Spec.(*usecasekind.Grant)
			if !ok {
				errs = append(errs, fmt.Errorf("agent %s: usecase grant has spec %T, want *usecasekind.Grant", name, g.Spec))
				continue
			}
			for _, k := range spec.Keys {
				if _, ok := usecase.Lookup(k); !ok {
					errs = append(errs, diag.New(diag.UsecaseUnknown, "agent %s: use case %q is not registered in this build", name, k))
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return &instance{log: env.Logger}, nil, nil
}

// instance is the usecase kind opened for one runtime. It holds nothing.
type instance struct {
	log *slog.Logger
}

// Source returns one grant's tools: one per key, in the grant's order.
func (i *instance) Source(agent *plan.Agent, g plan.Grant) (driver.Source, error) {
	spec, ok := g.Spec.(*usecasekind.Grant)
	if !ok {
		return nil, fmt.Errorf("agent %s: usecase grant has spec %T, want *usecasekind.Grant", agent.Name, g.Spec)
	}
	s := &source{agent: agent.Name, log: i.log, ops: make(map[string]*usecase.Operation, len(spec.Keys))}
	for _, k := range spec.Keys {
		if _, dup := s.ops[k]; dup {
			continue
		}
		op, ok := usecase.Lookup(k)
		if !ok {
			return nil, diag.New(diag.UsecaseUnknown, "agent %s: use case %q is not registered in this build", agent.Name, k)
		}
		s.ops[k] = op
		s.tools = append(s.tools, toolOf(op))
	}
	return s, nil
}

// toolOf returns op as an MCP tool definition: named after its key, with
// its description, input and output schemas and annotations. The schemas
// are the operation's own, shared and never modified.
func toolOf(op *usecase.Operation) *mcp.Tool {
	a := op.Annotations()
	t := &mcp.Tool{
		Name:        op.Key(),
		Description: op.Description(),
		InputSchema: op.InputSchema(),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: a.ReadOnly, DestructiveHint: a.Destructive, IdempotentHint: a.Idempotent},
	}
	// OutputSchema is an interface: a nil *jsonschema.Schema in it would
	// not be nil, and Call tells structured outputs by it.
	if out := op.OutputSchema(); out != nil {
		t.OutputSchema = out
	}
	return t
}

// Status reports nothing: use cases run in the worker and have no
// dependency to be ready or not.
func (*instance) Status() []driver.Dependency { return nil }

// Close does nothing.
func (*instance) Close() error { return nil }

// source is one usecase grant of one agent. It is immutable and safe for
// concurrent calls.
type source struct {
	agent string
	log   *slog.Logger
	tools []*mcp.Tool
	ops   map[string]*usecase.Operation
}

// Name is "usecase": the tools of every usecase grant come from the
// application itself.
func (*source) Name() string { return KindName }

// Tools returns the grant's tools; they never change.
func (s *source) Tools(context.Context) ([]*mcp.Tool, uint64, error) { return s.tools, 1, nil }

// A use case has no transport to wait for, no remote party whose results
// need a cap, and is never down: its source has none of the optional
// capabilities (driver.TimedSource, CappedSource, FallibleSource).

// Call runs one use case on ctx, which carries the caller.
func (s *source) Call(ctx context.Context, tool *mcp.Tool, args map[string]any, _ driver.CallOptions) (res *mcp.CallToolResult, err error) {
	op := s.ops[tool.Name]
	if op == nil {
		return nil, diag.New(diag.ToolUnknown, "there is no use case %q in this grant", tool.Name)
	}
	defer func() {
		if v := recover(); v != nil {
			s.log.ErrorContext(ctx, "use case panicked", "usecase", op.Key(), "agent", s.agent,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			res, err = errorResult("use case "+op.Key()+" failed with an internal error"), nil
		}
	}()
	out, err := op.Invoke(ctx, args)
	if err != nil {
		if diag.CodeOf(err) != "" || (ctx.Err() != nil && errors.Is(err, ctx.Err())) {
			return nil, err
		}
		return errorResult(err.Error()), nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		s.log.ErrorContext(ctx, "use case output cannot be encoded", "usecase", op.Key(), "agent", s.agent, "reason", err.Error())
		return errorResult("use case " + op.Key() + " returned a result that cannot be encoded as JSON"), nil
	}
	r := &result{}
	// b is json.Marshal's own copy, never written again: the text can share it.
	r.text.Text = unsafe.String(unsafe.SliceData(b), len(b))
	r.content[0] = &r.text
	r.res.Content = r.content[:]
	if tool.OutputSchema != nil {
		r.res.StructuredContent = out
	}
	return &r.res, nil
}

// result is a use case's result in one allocation: the result, its one
// content and the slice holding it.
type result struct {
	res     mcp.CallToolResult
	text    mcp.TextContent
	content [1]mcp.Content
}

// errorResult is a tool's own failure, as the model reads it.
func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

func sortedAgents(p *plan.Plan) []string { return slices.Sorted(maps.Keys(p.Agents)) }

var (
	_ driver.Kind     = Kind{}
	_ driver.Instance = (*instance)(nil)
	_ driver.Source   = (*source)(nil)
)
