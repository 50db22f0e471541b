// Package ticket is the config half of the ticket kind: an agent granted a
// queue may open tickets in it. It owns ai.ticket_queues.
//
//	ai:
//	  ticket_queues:
//	    ops: {prefix: OPS, max_open: 2}
//	capabilities:
//	  - {kind: ticket, queue: ops}
package ticket

import (
	"maps"
	"slices"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
)

// DefaultMaxOpen is how many tickets a queue holds open when max_open is not set.
const DefaultMaxOpen = 10

// Kind is the config half.
type Kind struct{}

func (Kind) Name() string    { return "ticket" }
func (Kind) Section() string { return "ticket_queues" }

// QueueConfig is one entry of ai.ticket_queues as written.
type QueueConfig struct {
	Prefix  string `koanf:"prefix"`
	MaxOpen int    `koanf:"max_open"`
}

// Queues is the kind's part of the plan.
type Queues map[string]*Queue

// Queue is one queue as the plan records it.
type Queue struct {
	Prefix    string   `json:"prefix"`
	MaxOpen   int      `json:"max_open"`
	GrantedTo []string `json:"granted_to"`
}

// Grant is a ticket grant's plan spec.
type Grant struct {
	Queue string `json:"queue"`
}

type configured struct {
	queues Queues
}

// Configure decodes ai.ticket_queues strictly and defaults it.
func (Kind) Configure(env *grants.Env, raw map[string]any) (grants.Configured, diag.Diagnostics) {
	var declared map[string]*QueueConfig
	ds := config.DecodeStrict(raw, &declared, "ai.ticket_queues")
	c := &configured{queues: Queues{}}
	for _, name := range slices.Sorted(maps.Keys(declared)) {
		q := declared[name]
		if q == nil {
			q = &QueueConfig{}
		}
		p := config.Join("ai.ticket_queues", name)
		ds = config.Positive(ds, env.Deployment, config.Join(p, "max_open"), q.MaxOpen)
		if q.MaxOpen <= 0 {
			q.MaxOpen = DefaultMaxOpen
		}
		if q.Prefix == "" {
			ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, config.Join(p, "prefix"), "a queue needs a prefix"))
			continue
		}
		c.queues[name] = &Queue{Prefix: q.Prefix, MaxOpen: q.MaxOpen, GrantedTo: []string{}}
	}
	return c, ds
}

func (c *configured) Part() (string, any, bool) {
	return "ticket_queues", c.queues, len(c.queues) > 0
}

type grantSettings struct {
	Queue string `koanf:"queue"`
}

// Compile resolves one grant.
func (c *configured) Compile(_ *grants.Env, art *config.Artifact, settings map[string]any, p string) (any, diag.Diagnostics) {
	var g grantSettings
	ds := config.DecodeStrict(settings, &g, p)
	q := c.queues[g.Queue]
	if q == nil {
		return nil, append(ds, diag.Errorf(QueueUnknown, config.Join(p, "queue"), "queue %q is not declared in ai.ticket_queues", g.Queue))
	}
	q.GrantedTo = grants.AppendUnique(q.GrantedTo, art.Name)
	return &Grant{Queue: g.Queue}, ds
}

var _ grants.Kind = Kind{}
