package usecase

import "errors"

// Option configures an operation at Register.
type Option func(*config)

type config struct {
	description string
	readOnly    bool
	destructive bool
	additive    bool
	idempotent  bool
	mcp         []MCPUse
}

// Description sets the tool description the model reads: what the operation
// does and when to use it.
func Description(text string) Option {
	return func(c *config) { c.description = text }
}

// ReadOnly marks an operation that changes nothing (readOnlyHint: true).
// Policies see tool.read_only; approval does not apply to it.
func ReadOnly() Option {
	return func(c *config) { c.readOnly = true }
}

// Destructive marks an operation that may change or delete data
// (destructiveHint: true): the agent's policies.approval applies to it, and
// rules see tool.destructive. It is also what an operation marked neither
// ReadOnly nor Additive is taken to be; say it to make it plain.
func Destructive() Option {
	return func(c *config) { c.destructive = true }
}

// Additive marks an operation that writes but only adds — creates a ticket,
// appends a comment — and never destroys (destructiveHint: false).
func Additive() Option {
	return func(c *config) { c.additive = true }
}

// Idempotent marks an operation that has no further effect when repeated
// with the same arguments (idempotentHint: true).
func Idempotent() Option {
	return func(c *config) { c.idempotent = true }
}

// MCPUse is one MCP server an operation reaches directly, declared with
// WithMCP: the server's name in api.yaml, and the globs its tools must
// match (none: every tool).
type MCPUse struct {
	Server  string
	Include []string
}

// WithMCP declares that the operation reaches an MCP server directly, limited
// to the tools matching include (none: every tool). The runtime opens such
// servers at start-up: the built-in set of kinds hands them to the mcp kind.
func WithMCP(server string, include ...string) Option {
	return func(c *config) {
		c.mcp = append(c.mcp, MCPUse{Server: server, Include: append([]string(nil), include...)})
	}
}

func (c *config) check() error {
	n := 0
	for _, b := range []bool{c.readOnly, c.destructive, c.additive} {
		if b {
			n++
		}
	}
	if n > 1 {
		return errors.New("ReadOnly, Destructive and Additive exclude one another")
	}
	for _, u := range c.mcp {
		if u.Server == "" {
			return errors.New("WithMCP with an empty server name")
		}
	}
	return nil
}

// annotations maps the options to the hints: a destructive operation sets
// Destructive to true, an additive one to false; one marked neither
// read-only nor additive leaves it unset, which MCP takes as destructive.
func (c *config) annotations() Annotations {
	a := Annotations{ReadOnly: c.readOnly, Idempotent: c.idempotent}
	switch {
	case c.destructive:
		t := true
		a.Destructive = &t
	case c.additive:
		f := false
		a.Destructive = &f
	}
	return a
}
