package driver

import "github.com/modelcontextprotocol/go-sdk/mcp"

// ClassifiedBy says where a tool's classification — destructive,
// read-only, idempotent — came from.
type ClassifiedBy string

const (
	// ClassifiedByServer: the tool's own annotations, as its source
	// declared them (an MCP server's hints, a use case's options, a SQL
	// statement, a remote agent's tool).
	ClassifiedByServer ClassifiedBy = "server"
	// ClassifiedByOverride: the operator's override of the tool's
	// classification.
	ClassifiedByOverride ClassifiedBy = "override"
	// ClassifiedByUntrusted: the source's claims are not trusted
	// (trust_annotations: false), so the tool is destructive, neither
	// read-only nor idempotent.
	ClassifiedByUntrusted ClassifiedBy = "untrusted"
)

// Classification is what a toolset holds of a tool's effects, and who
// said so. Destructive tools go through approval; read-only or idempotent
// ones may be sent again after a connection broke.
type Classification struct {
	Destructive, ReadOnly, Idempotent bool
	By                                ClassifiedBy
}

// ClassifyingSource is a source that classifies its tools itself: a kind
// that knows more than a tool's decoded annotations say — which hints were
// absent on the wire rather than false, the operator's overrides, whether
// the server is trusted — tells the toolset here. Classify is called with
// a tool its Tools returned, concurrently. A source without it is
// classified by its tools' annotations (ClassifiedByServer).
type ClassifyingSource interface {
	Classify(t *mcp.Tool) Classification
}

// ClassifyAnnotations classifies a tool by its annotations, by MCP's
// rule: destructiveHint: true is destructive; without a destructiveHint,
// readOnlyHint: false is; a tool without annotations is not. go-sdk
// decodes readOnlyHint into a plain bool, so an absent readOnlyHint reads
// as false here: a kind that can tell the two apart normalises its tools'
// annotations (an explicit destructiveHint) or is a ClassifyingSource.
func ClassifyAnnotations(t *mcp.Tool) Classification {
	c := Classification{By: ClassifiedByServer}
	if a := t.Annotations; a != nil {
		c.ReadOnly, c.Idempotent = a.ReadOnlyHint, a.IdempotentHint
		c.Destructive = (a.DestructiveHint != nil && *a.DestructiveHint) || (a.DestructiveHint == nil && !a.ReadOnlyHint)
	}
	return c
}
