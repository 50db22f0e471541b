package ticket

import (
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
)

// The ticket kind's own codes. Its other problems are reported under the
// core's codes: a malformed setting is CONFIG_VALUE_INVALID.
const (
	// QueueUnknown: a grant names an undeclared queue.
	QueueUnknown diag.Code = "TICKET_QUEUE_UNKNOWN"
)

// Codes returns the catalogue entries of the kind's codes, which the set
// of kinds that holds it adds to the core's (grants.Set.Catalog).
func (Kind) Codes() []diag.Entry {
	return []diag.Entry{
		{Code: QueueUnknown, Phase: diag.PhaseCompile,
			Meaning: "A ticket grant names a queue that ai.ticket_queues does not declare, or names none.",
			Fix:     "Declare the queue under ai.ticket_queues, or correct the name in the grant."},
	}
}

var _ grants.Coded = Kind{}
