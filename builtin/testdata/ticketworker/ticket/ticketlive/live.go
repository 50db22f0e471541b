// Package ticketlive is the live half of the ticket kind: each granted
// queue is one tool, open_ticket, that numbers tickets in memory.
package ticketlive

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"example.com/ticketworker/ticket"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kind is the live half.
type Kind struct{}

// Open opens every granted queue.
func (Kind) Open(_ context.Context, env driver.Env) (driver.Instance, []*driver.Failure, error) {
	queues, _ := env.Plan.Part("ticket").(ticket.Queues)
	inst := &instance{queues: map[string]*queue{}}
	for name, q := range queues {
		if len(q.GrantedTo) > 0 {
			inst.queues[name] = &queue{name: name, spec: q}
		}
	}
	return inst, nil, nil
}

type instance struct {
	queues map[string]*queue
}

func (i *instance) Source(_ *plan.Agent, g plan.Grant) (driver.Source, error) {
	spec, _ := g.Spec.(*ticket.Grant)
	if spec == nil || i.queues[spec.Queue] == nil {
		return nil, diag.New(ticket.QueueUnknown, "the grant names no opened queue")
	}
	return i.queues[spec.Queue], nil
}

func (i *instance) Status() []driver.Dependency {
	var out []driver.Dependency
	for name, q := range i.queues {
		out = append(out, driver.Dependency{Name: name, Kind: "ticket", State: driver.StateReady,
			Required: true, Tools: 1, Agents: q.spec.GrantedTo})
	}
	return out
}

func (i *instance) Close() error { return nil }

var openTicket = &mcp.Tool{
	Name:        "open_ticket",
	Description: "Open a ticket in the queue; returns its id.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false}`),
	Annotations: &mcp.ToolAnnotations{IdempotentHint: false, DestructiveHint: new(bool)},
}

// queue is one granted queue, and the source of its tool.
type queue struct {
	name string
	spec *ticket.Queue

	mu   sync.Mutex
	open int
}

func (q *queue) Name() string { return q.name }

func (q *queue) Tools(context.Context) ([]*mcp.Tool, uint64, error) {
	return []*mcp.Tool{openTicket}, 1, nil
}

func (q *queue) Call(_ context.Context, _ *mcp.Tool, args map[string]any, _ driver.CallOptions) (*mcp.CallToolResult, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.open >= q.spec.MaxOpen {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the queue is full"}}}, nil
	}
	q.open++
	id := fmt.Sprintf("%s-%d", q.spec.Prefix, q.open)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: id + ": " + fmt.Sprint(args["title"])}}}, nil
}

var (
	_ driver.Kind     = Kind{}
	_ driver.Instance = (*instance)(nil)
	_ driver.Source   = (*queue)(nil)
)
