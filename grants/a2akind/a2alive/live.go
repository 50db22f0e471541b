// Package a2alive is the live half of the a2a capability kind: another agent,
// reached over the Agent2Agent protocol (A2A) and offered to the model as one
// tool. The built-in set (package builtin) pairs it with the config half; an
// application that links builtin has it.
//
// # What the runtime does with it
//
// At start-up, under the start-up deadline and concurrently with everything
// else, each granted remote agent's card is fetched from
// <url>/.well-known/agent-card.json through the agent's auth strategy (built
// once, with purpose "a2a", and shared by every call). A card that cannot be
// fetched, or that offers no JSON-RPC interface this package speaks, is
// A2A_AGENT_UNREACHABLE: fatal for a required agent; for an optional one it
// is logged, the agent is fetched again in the background with capped,
// jittered backoff until the runtime closes, and its tool answers
// TOOL_UNAVAILABLE meanwhile. A call that cannot reach an agent that was up
// — refused, reset, cut off, or a 502 or 503 from a gateway in front of it —
// marks it down the same way, at once; a 504 (a gateway that gave up
// waiting) is TRANSPORT_TIMEOUT and leaves it up. A call that finds the
// agent down has its card fetched now and waits a moment for that, so that
// an agent that is back serves the call whatever the backoff says.
//
// Each grant becomes one tool named after the agent as the deployment names
// it (ai.a2a_agents.<name>), whose description shows the card's name,
// description and skills (third-party text, capped). Its input is
// {"message": string}; it sends that message with SendMessage and answers
// with the agent's reply text (its message, or its task's artifacts). When
// the agent answers with a task that is still running, GetTask is polled
// until the task ends or the call's deadline passes: the agent's timeout_ms
// (TRANSPORT_TIMEOUT, which the model may retry) within the supervisor's
// tool_timeout_ms. A task that fails, is rejected or canceled, or stops to
// ask for input, is a result with isError set and the agent's words.
//
// Credentials are sent only to the configured origin: a card naming an
// endpoint on another scheme, host or port is refused, and so is a redirect
// to one.
//
// Status reports every opened agent as a dependency of kind "a2a".
//
// # Why a hand-written binding, not a2a-go
//
// The Go SDK, github.com/a2aproject/a2a-go, is at v0.3.3 on the module proxy
// (the only version there; there is no /v2): it speaks A2A 0.3 —
// message/send, tasks/get, lower-case roles and states, "kind"-tagged parts —
// while peers built on the current SDKs, such as @a2a-js/sdk 1.x, serve A2A
// 1.0 (SendMessage, GetTask, ROLE_USER, TASK_STATE_COMPLETED, an A2A-Version
// header, supportedInterfaces on the card) and answer 0.3 only when their
// operator turns the compatibility layer on. a2a-go would also bring gRPC
// 1.73 and newer protobuf and genproto modules into go.mod, upgrading what
// hashicorp/go-plugin runs on, for a client that needs two JSON-RPC methods.
// The part of the protocol a one-message tool uses is small and stable, so
// this package carries it itself (jsonrpc.go): A2A 1.0 JSON-RPC first, and
// A2A 0.3 (message/send, tasks/get) for an agent whose card offers only that.
// Streaming, push notifications and multi-turn contexts are not used.
package a2alive

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/a2akind"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
)

// KindName is the grant kind this package serves.
const KindName = "a2a"

// Kind is the live half of the a2a kind.
type Kind struct{}

// Open fetches the card of every remote agent an agent of the plan grants,
// all concurrently under ctx (the start-up deadline). An auth strategy that
// cannot be built (a secret that does not resolve) is an error, whatever
// the agent's required setting; an agent that cannot be reached is a
// Failure, Fatal when the agent is required.
func (Kind) Open(ctx context.Context, env driver.Env) (driver.Instance, []*driver.Failure, error) {
	inst := &instance{log: env.Logger, agents: map[string]*remote{}, startup: env.Plan.Startup.TimeoutMS, events: env.Events}
	inst.tp, inst.tracer = tracerOf(env)
	inst.ctx, inst.stop = context.WithCancel(env.Closing)
	base := env.HTTPTransport
	if base == nil {
		inst.owned = http.DefaultTransport.(*http.Transport).Clone()
		base = inst.owned
	}

	var (
		mu       sync.Mutex
		errs     []error
		failures []*driver.Failure
		wg       sync.WaitGroup
	)
	agents := a2akind.PlanAgents(env.Plan)
	for _, name := range granted(env.Plan) {
		spec := agents[name]
		if spec == nil {
			errs = append(errs, diag.New(diag.A2AAgentUnknown, "remote agent %s is granted but not in the plan", name))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			strat, err := authlive.Build(ctx, authlive.EnvFor(env, "a2a", "remote agent "+name), spec.Auth)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			a, err := newRemote(inst, name, spec, base, strat)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				if strat != nil {
					_ = strat.Close()
				}
				return
			}
			mu.Lock()
			inst.agents[name] = a
			mu.Unlock()
			if err := a.connect(ctx); err != nil {
				mu.Lock()
				failures = append(failures, &driver.Failure{Name: name, Err: err, Fatal: spec.Required})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return inst, nil, errors.Join(errs...)
	}
	slices.SortFunc(failures, func(a, b *driver.Failure) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	for _, f := range failures {
		if !f.Fatal {
			inst.agents[f.Name].sup.Wake()
		}
	}
	return inst, failures, nil
}

// granted returns the remote agents the plan's agents grant, sorted.
func granted(p *plan.Plan) []string {
	set := map[string]bool{}
	for _, a := range p.Agents {
		for _, g := range a.Grants {
			if spec, ok := g.Spec.(*a2akind.Grant); ok {
				set[spec.Agent] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// instance is the a2a kind opened for one runtime: one agent per granted
// remote agent. It is safe for concurrent use.
type instance struct {
	log     *slog.Logger
	agents  map[string]*remote // written only during Open
	owned   *http.Transport    // the base transport, when the runtime gave none
	startup int                // ms: the budget of one background attempt
	tp      trace.TracerProvider
	tracer  trace.Tracer
	events  driver.Events // told when an agent's tool changes

	// ctx ends when the runtime closes or the instance does; supervisors
	// stop then.
	ctx  context.Context
	stop context.CancelFunc

	mu     sync.Mutex // guards closed
	closed bool
}

// Source returns the tool of one grant: its remote agent.
func (i *instance) Source(ag *plan.Agent, g plan.Grant) (driver.Source, error) {
	spec, ok := g.Spec.(*a2akind.Grant)
	if !ok {
		return nil, diag.New(diag.CapabilityKindUnknown, "agent %s: a2a grant has an unexpected spec", ag.Name)
	}
	a := i.agents[spec.Agent]
	if a == nil {
		return nil, diag.New(diag.A2AAgentUnknown, "agent %s: remote agent %s was not opened", ag.Name, spec.Agent)
	}
	return &source{a: a}, nil
}

// Status reports every opened remote agent.
func (i *instance) Status() []driver.Dependency {
	out := make([]driver.Dependency, 0, len(i.agents))
	for _, name := range slices.Sorted(maps.Keys(i.agents)) {
		out = append(out, i.agents[name].status())
	}
	return out
}

// Recheck has the card of every agent that is down fetched now, and waits,
// within ctx, until each fetch has ended.
func (i *instance) Recheck(ctx context.Context) {
	var wg sync.WaitGroup
	for _, a := range i.agents {
		if a.endpoint() == nil {
			wg.Go(func() { _ = a.sup.Recheck(ctx) })
		}
	}
	wg.Wait()
}

// Close stops the supervisors, waits for them, and releases the agents'
// strategies and connections. It is idempotent.
func (i *instance) Close() error {
	i.mu.Lock()
	if i.closed {
		i.mu.Unlock()
		return nil
	}
	i.closed = true
	i.mu.Unlock()
	i.stop()
	for _, a := range i.agents {
		a.sup.Wait()
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(i.agents)) {
		if s := i.agents[name].strat; s != nil {
			if err := s.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if i.owned != nil {
		i.owned.CloseIdleConnections()
	}
	return errors.Join(errs...)
}

var (
	_ driver.Kind      = Kind{}
	_ driver.Instance  = (*instance)(nil)
	_ driver.Rechecker = (*instance)(nil)
)
