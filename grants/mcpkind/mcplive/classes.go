package mcplive

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/runtime/driver"
)

// classOf classifies a tool as the server described it, in four steps,
// each deciding over the one before:
//
//  1. the server's claim, by MCP's rule on the hints it sent: destructiveHint
//     true is destructive; without a destructiveHint, readOnlyHint false is;
//     a tool with neither is not (go-sdk's readOnlyHint: false may be an
//     absent hint: sent tells them apart, and when it cannot say — a
//     transport heddle does not see into — the decoded false stands);
//  2. trust_annotations: false: destructive, neither read-only nor
//     idempotent (untrusted);
//  3. read_only_tools, idempotent_tools, destructive_tools, in that order
//     (override);
//  4. the tools: map's entry for the tool (override).
func classOf(spec *mcpkind.Server, t *mcp.Tool, sent sentHints, known bool) driver.Classification {
	c := driver.ClassifyAnnotations(t)
	if a := t.Annotations; a != nil && known && !sent.readOnly && a.DestructiveHint == nil {
		c.Destructive = false // neither hint was sent: not destructive
	}
	if spec.Untrusted {
		c = driver.Classification{Destructive: true, By: driver.ClassifiedByUntrusted}
	}
	var overrides []grants.ToolOverride
	yes := true
	if matchAny(spec.ReadOnlyTools, t.Name) {
		overrides = append(overrides, grants.ToolOverride{ReadOnly: &yes})
	}
	if matchAny(spec.IdempotentTools, t.Name) {
		overrides = append(overrides, grants.ToolOverride{Idempotent: &yes})
	}
	if matchAny(spec.DestructiveTools, t.Name) {
		overrides = append(overrides, grants.ToolOverride{Destructive: &yes})
	}
	if o, _, ok := spec.Tools.Lookup(t.Name); ok {
		overrides = append(overrides, o)
	}
	for _, o := range overrides {
		c.Destructive, c.ReadOnly, c.Idempotent = o.Apply(c.Destructive, c.ReadOnly, c.Idempotent)
		c.By = driver.ClassifiedByOverride
	}
	return c
}

// classified returns t as the toolset is to see it — annotations whose
// hints say c, explicitly, so that whatever reads them (approval, the
// resending of a call, the MCP facade) agrees — or t itself when its
// annotations already say c.
func classified(t *mcp.Tool, c driver.Classification) *mcp.Tool {
	if d := driver.ClassifyAnnotations(t); d.Destructive == c.Destructive && d.ReadOnly == c.ReadOnly && d.Idempotent == c.Idempotent {
		return t
	}
	n := *t
	a := mcp.ToolAnnotations{}
	if t.Annotations != nil {
		a = *t.Annotations
	}
	destructive := c.Destructive
	a.ReadOnlyHint, a.IdempotentHint, a.DestructiveHint = c.ReadOnly, c.Idempotent, &destructive
	n.Annotations = &a
	return &n
}

// classify classifies one of the server's tools, and returns it as the
// toolset is to see it.
func (s *server) classify(t *mcp.Tool) (*mcp.Tool, driver.Classification) {
	sent, known := s.hints.sent(t.Name)
	c := classOf(s.spec, t, sent, known)
	return classified(t, c), c
}

// Classify says where a tool's classification came from; its flags are
// those of the annotations Tools gave it.
func (m *source) Classify(t *mcp.Tool) driver.Classification {
	c := driver.ClassifyAnnotations(t)
	m.mu.Lock()
	c.By = m.by[t.Name]
	m.mu.Unlock()
	if c.By == "" {
		c.By = driver.ClassifiedByServer
	}
	return c
}

var _ driver.ClassifyingSource = (*source)(nil)
