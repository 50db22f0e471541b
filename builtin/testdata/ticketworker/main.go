// Command ticketworker is heddle with a capability kind of its own, ticket,
// built from outside heddle's repository with nothing but its public
// packages. Besides heddle's commands it has one of its own:
//
//	ticketworker codes   # the catalogue of every code it can report, as JSON
//
// which is the built-in set's catalogue and the ticket kind's codes: what
// an application generates its own reference of codes from.
package main

import (
	"encoding/json"
	"os"

	"example.com/ticketworker/ticket"
	"example.com/ticketworker/ticket/ticketlive"
	"github.com/heddlehq/heddle/builtin"
	"github.com/heddlehq/heddle/heddlecmd"
)

func main() {
	kinds := builtin.Default().With(builtin.Kind{Config: ticket.Kind{}, Live: ticketlive.Kind{}})
	if len(os.Args) == 2 && os.Args[1] == "codes" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(kinds.Grants().Catalog()); err != nil {
			os.Exit(1)
		}
		return
	}
	os.Exit(heddlecmd.Run(os.Args[1:], os.Stdout, os.Stderr, heddlecmd.Options{Kinds: kinds}))
}
