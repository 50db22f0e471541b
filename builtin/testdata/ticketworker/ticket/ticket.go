// Package ticket is the config half of the ticket kind: an agent granted a
// queue may open tickets in it. It owns ai.ticket_queues. A queue lives
// behind an HTTP endpoint, reached with the auth strategy its auth: block
// names — a built-in one or one of ai.auth_plugins.
//
//	ai:
//	  ticket_queues:
//	    ops:
//	      prefix: OPS
//	      max_open: 2
//	      url: https://tickets.internal.example.com/queues/ops
//	      auth: {kind: bearer, token_ref: ${secrets:/tickets/token}}
//	capabilities:
//	  - {kind: ticket, queue: ops}
package ticket

import (
	"maps"
	"slices"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/plan"
)

// DefaultMaxOpen is how many tickets a queue holds open when max_open is not set.
const DefaultMaxOpen = 10

// Kind is the config half.
type Kind struct{}

func (Kind) Name() string    { return "ticket" }
func (Kind) Section() string { return "ticket_queues" }

// QueueConfig is one entry of ai.ticket_queues as written.
type QueueConfig struct {
	Prefix  string       `koanf:"prefix"`
	MaxOpen int          `koanf:"max_open"`
	URL     string       `koanf:"url"`
	Auth    *config.Auth `koanf:"auth"`
}

// Queues is the kind's part of the plan.
type Queues map[string]*Queue

// Queue is one queue as the plan records it: credentials as references.
type Queue struct {
	Prefix    string     `json:"prefix"`
	MaxOpen   int        `json:"max_open"`
	URL       string     `json:"url"`
	Auth      *plan.Auth `json:"auth,omitempty"`
	GrantedTo []string   `json:"granted_to"`
}

// Grant is a ticket grant's plan spec.
type Grant struct {
	Queue string `json:"queue"`
}

type configured struct {
	queues Queues
}

// Configure decodes ai.ticket_queues strictly, defaults it and checks each
// queue's URL and auth block, as the built-in kinds check theirs.
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
		qds := config.Positive(nil, env.Deployment, config.Join(p, "max_open"), q.MaxOpen)
		if q.MaxOpen <= 0 {
			q.MaxOpen = DefaultMaxOpen
		}
		if q.Prefix == "" {
			qds = append(qds, diag.Errorf(diag.ConfigValueInvalid, config.Join(p, "prefix"), "a queue needs a prefix"))
		}
		qds = append(qds, grants.CheckURL(q.URL, diag.ConfigValueInvalid, config.Join(p, "url"))...)
		var auth *plan.Auth
		if q.Auth != nil {
			settings, strat, ads := env.Auth.Check(q.Auth, config.Join(p, "auth"), "ticket")
			qds = append(qds, ads...)
			auth = &plan.Auth{Kind: q.Auth.Kind, Settings: settings, Plugin: strat.Plugin}
		}
		ds = append(ds, qds...)
		if qds.HasErrors() {
			continue
		}
		c.queues[name] = &Queue{Prefix: q.Prefix, MaxOpen: q.MaxOpen, URL: q.URL, Auth: auth, GrantedTo: []string{}}
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
