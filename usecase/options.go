package usecase

import (
	"errors"

	"github.com/heddlehq/heddle/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Option configures an operation at Register.
type Option func(*config)

type config struct {
	description string
	readOnly    bool
	destructive bool
	additive    bool
	idempotent  bool
	mcp         []runtime.MCPUse
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

// WithMCP declares that the operation reaches an MCP server directly, limited
// to the tools matching include (none: every tool). The runtime opens such
// servers when the application passes MCPUses to runtime.Options.MCPUses.
func WithMCP(server string, include ...string) Option {
	return func(c *config) {
		c.mcp = append(c.mcp, runtime.MCPUse{Server: server, Include: append([]string(nil), include...)})
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

// annotations maps the options to MCP's: a destructive operation sets
// destructiveHint: true, an additive one false; one marked neither read-only
// nor additive keeps the protocol's default, destructive.
func (c *config) annotations() mcp.ToolAnnotations {
	a := mcp.ToolAnnotations{ReadOnlyHint: c.readOnly, IdempotentHint: c.idempotent}
	switch {
	case c.destructive:
		t := true
		a.DestructiveHint = &t
	case c.additive:
		f := false
		a.DestructiveHint = &f
	}
	return a
}
