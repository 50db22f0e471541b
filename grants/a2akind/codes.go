package a2akind

import (
	"slices"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
)

// Codes returns the catalogue entries of the codes only the a2a kind
// reports, from this package or its live half (grants.Coded). Codes it
// shares with the core, an auth strategy or another kind are catalogued by
// the core (diag.Catalog).
func (Kind) Codes() []diag.Entry { return slices.Clone(codes) }

var codes = []diag.Entry{
	{Code: diag.A2AAgentUnknown, Phase: diag.PhaseCompile,
		Meaning: "An a2a grant names a remote agent ai.a2a_agents does not declare, or names none.",
		Fix:     "Declare the agent, or correct the name."},
	{Code: diag.A2AURLInvalid, Phase: diag.PhaseCompile,
		Meaning: "A remote agent's URL breaks the same rules as MCP_URL_INVALID. The URL is redacted.",
		Fix:     "Use https://host/path with no credentials in it."},
	{Code: diag.A2AAgentUnreachable, Phase: diag.PhaseStartup,
		Meaning: "A remote agent's card (its url with /.well-known/agent-card.json) could not be fetched or used at start-up, and the message says why: the connection was refused (nothing listens at that host and port), the host name does not resolve, the TLS handshake failed, the fetch timed out, the agent answered an HTTP error, or the card is not valid JSON or offers no JSON-RPC interface on the agent's own origin. A required agent aborts start-up; an optional one (required: false) is logged at WARN, shown as down by heddle health, and fetched again by its supervisor until it answers.",
		Fix:     "A refused connection: start the agent (the shipped example's is bin/heddle-example-agent, built by make build; make demo starts it), or correct the host and port of its url. A host that does not resolve, a TLS failure or a timeout: as for MCP_SERVER_UNREACHABLE. An HTTP 404: the url must be the agent's base URL, or its card's own URL. Mark an agent whose absence the other tools should survive required: false.",
		Example: "a2a_agents: {triage: {url: http://127.0.0.1:9}}"},
}

var _ grants.Coded = Kind{}
