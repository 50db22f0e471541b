package ticket

import (
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
)

// The ticket kind's own codes. Its other problems are reported under the
// core's codes: a malformed setting is CONFIG_VALUE_INVALID, an auth block
// MCP_AUTH_STRATEGY_UNKNOWN or MCP_AUTH_STRATEGY_INVALID, as for any kind
// that takes one, and a tool that changed since heddle.lock was written
// TOOL_DEFINITION_CHANGED.
const (
	// QueueUnknown: a grant names an undeclared queue.
	QueueUnknown diag.Code = "TICKET_QUEUE_UNKNOWN"
	// QueueUnreachable: a queue's endpoint could not be reached at
	// start-up, or refused the worker's credentials.
	QueueUnreachable diag.Code = "TICKET_QUEUE_UNREACHABLE"
)

// Codes returns the catalogue entries of the kind's codes, which the set
// of kinds that holds it adds to the core's (grants.Set.Catalog).
func (Kind) Codes() []diag.Entry {
	return []diag.Entry{
		{Code: QueueUnknown, Phase: diag.PhaseCompile,
			Meaning: "A ticket grant names a queue that ai.ticket_queues does not declare, or names none.",
			Fix:     "Declare the queue under ai.ticket_queues, or correct the name in the grant."},
		{Code: QueueUnreachable, Phase: diag.PhaseStartup,
			Meaning: "A queue's endpoint could not be reached at start-up, answered an HTTP error, or refused the worker's credentials (HTTP 401 or 403). The message names the queue and the status.",
			Fix:     "Start the queue's service or correct its url; for a refusal, check the queue's auth block and the secret it references.",
			Example: "ticket_queues: {ops: {prefix: OPS, url: https://tickets.example.com/queues/ops}}   # and the service wants a token"},
	}
}

var _ grants.Coded = Kind{}
