// Package ticketlive is the live half of the ticket kind. Each granted
// queue is a service behind an HTTP endpoint: GET {url}/tools lists the
// queue's tools (open_ticket), POST {url}/tickets opens a ticket and answers
// its number. Requests carry the credentials of the queue's auth strategy,
// built once per queue from the plan, the plan's auth plugins included.
//
// The kind pins its tools in heddle.lock (driver.Pinner), and, opened with
// a lock, refuses to start a queue whose pinned tools changed
// (TOOL_DEFINITION_CHANGED).
package ticketlive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"example.com/ticketworker/ticket"
	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kind is the live half.
type Kind struct{}

// Open opens every granted queue: builds its auth strategy and lists its
// tools. A queue that cannot be listed, or whose tools differ from the
// lock's pins, fails start-up.
func (Kind) Open(ctx context.Context, env driver.Env) (driver.Instance, []*driver.Failure, error) {
	queues, _ := env.Plan.Part("ticket").(ticket.Queues)
	inst := &instance{queues: map[string]*queue{}}
	base := env.HTTPTransport
	if base == nil {
		base = http.DefaultTransport
	}
	var failures []*driver.Failure
	for name, spec := range queues {
		if len(spec.GrantedTo) == 0 {
			continue
		}
		q := &queue{name: name, spec: spec}
		transport := base
		if spec.Auth != nil {
			strat, err := authlive.Build(ctx, authlive.EnvFor(env, "ticket", "queue "+name), spec.Auth)
			if err != nil {
				return inst, nil, err
			}
			q.strat = strat
			transport = strat.Wrap(base)
		}
		q.client = &http.Client{Transport: transport}
		inst.queues[name] = q
		if err := q.list(ctx); err != nil {
			failures = append(failures, &driver.Failure{Name: name, Err: err, Fatal: true})
			continue
		}
		if changed, _ := env.Pins.Diff(name, q.tools); len(changed) > 0 {
			err := diag.New(diag.ToolDefinitionChanged, "queue %s: tools changed since heddle.lock was written: %s", name, strings.Join(changed, ", "))
			failures = append(failures, &driver.Failure{Name: name, Err: err, Fatal: true})
		}
	}
	return inst, failures, nil
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
			Required: true, Tools: len(q.tools), Agents: q.spec.GrantedTo})
	}
	return out
}

// Pins returns each opened queue's tools, as the queue listed them.
func (i *instance) Pins() map[string][]*mcp.Tool {
	out := map[string][]*mcp.Tool{}
	for name, q := range i.queues {
		out[name] = q.tools
	}
	return out
}

// Offered: every tool of a granted queue is offered to its agents.
func (i *instance) Offered(dep, tool string) bool {
	q := i.queues[dep]
	if q == nil {
		return false
	}
	for _, t := range q.tools {
		if t.Name == tool {
			return true
		}
	}
	return false
}

func (i *instance) Close() error {
	var errs []error
	for _, q := range i.queues {
		if q.strat != nil {
			errs = append(errs, q.strat.Close())
		}
	}
	return errors.Join(errs...)
}

// queue is one granted queue, and the source of its tools.
type queue struct {
	name   string
	spec   *ticket.Queue
	client *http.Client
	strat  authlive.Strategy
	tools  []*mcp.Tool // set by Open, then read-only

	mu   sync.Mutex
	open int
}

// list fetches the queue's tools. Its errors carry a code: the strategy's
// own (a plugin that could not supply credentials), or
// TICKET_QUEUE_UNREACHABLE.
func (q *queue) list(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, q.spec.URL+"/tools", nil)
	if err != nil {
		return diag.Wrap(ticket.QueueUnreachable, err, "queue %s: %v", q.name, err)
	}
	resp, err := q.client.Do(req)
	if err != nil {
		// Not the *url.Error, which repeats the URL.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		if diag.CodeOf(err) != "" {
			return err // the strategy's, naming the queue
		}
		return diag.Wrap(ticket.QueueUnreachable, err, "queue %s: the endpoint did not answer: %v", q.name, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return diag.New(ticket.QueueUnreachable, "queue %s: the endpoint refused the credentials (HTTP %d)", q.name, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return diag.New(ticket.QueueUnreachable, "queue %s: the endpoint answered HTTP %d", q.name, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&q.tools); err != nil {
		return diag.Wrap(ticket.QueueUnreachable, err, "queue %s: the tool list is not JSON", q.name)
	}
	return nil
}

func (q *queue) Name() string { return q.name }

func (q *queue) Tools(context.Context) ([]*mcp.Tool, uint64, error) {
	return q.tools, 1, nil
}

func (q *queue) Call(ctx context.Context, _ *mcp.Tool, args map[string]any, _ driver.CallOptions) (*mcp.CallToolResult, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.open >= q.spec.MaxOpen {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the queue is full"}}}, nil
	}
	body, err := json.Marshal(map[string]any{"title": args["title"]})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.spec.URL+"/tickets", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := q.client.Do(req)
	if err != nil {
		return nil, diag.Wrap(diag.ToolUnavailable, err, "queue %s did not answer", q.name)
	}
	defer resp.Body.Close()
	var out struct {
		Number int `json:"number"`
	}
	if resp.StatusCode != http.StatusCreated {
		return nil, diag.New(diag.ToolUnavailable, "queue %s answered HTTP %d", q.name, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&out); err != nil {
		return nil, diag.Wrap(diag.ToolUnavailable, err, "queue %s: the answer is not JSON", q.name)
	}
	q.open++
	id := fmt.Sprintf("%s-%d", q.spec.Prefix, out.Number)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: id + ": " + fmt.Sprint(args["title"])}}}, nil
}

var (
	_ driver.Kind     = Kind{}
	_ driver.Instance = (*instance)(nil)
	_ driver.Pinner   = (*instance)(nil)
	_ driver.Source   = (*queue)(nil)
)
