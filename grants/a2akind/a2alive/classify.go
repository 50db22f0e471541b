package a2alive

import (
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// classified returns the agent's tool with the operator's classification
// (ai.a2a_agents.<agent>.classification) in its annotations, so that
// whatever reads them agrees; without one, t as it is.
func (a *remote) classified(t *mcp.Tool) *mcp.Tool {
	o := a.spec.Classification
	if o == nil {
		return t
	}
	c := driver.ClassifyAnnotations(t)
	d, ro, idem := o.Apply(c.Destructive, c.ReadOnly, c.Idempotent)
	an := *t.Annotations
	an.DestructiveHint, an.ReadOnlyHint, an.IdempotentHint = &d, ro, idem
	t.Annotations = &an
	return t
}

// Classify says whether the agent's tool is classified by the operator.
func (s *source) Classify(t *mcp.Tool) driver.Classification {
	c := driver.ClassifyAnnotations(t)
	if s.a.spec.Classification != nil {
		c.By = driver.ClassifiedByOverride
	}
	return c
}

var _ driver.ClassifyingSource = (*source)(nil)
